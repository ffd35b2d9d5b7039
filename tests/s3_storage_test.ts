/**
 * The s3 backend against a real radosgw (tests/rgw.ts): streaming multipart
 * uploads with the size limit enforced on the way and nothing left after a
 * failure; downloads with every rule of the fs backend (ETag, Range,
 * If-Range, HEAD, Content-Disposition, counts); redirect mode; start-up
 * refusing an unreachable bucket with one line.
 */
import assert from "node:assert/strict";
import { CreateMultipartUploadCommand, UploadPartCommand } from "@aws-sdk/client-s3";
import type { S3Config } from "../src/lib/config.ts";
import {
  EmptyUploadError,
  publishRelease,
  type S3ArtifactStore,
  sweepStore,
  UploadTooLargeError,
} from "../src/storage/mod.ts";
import { createS3Store } from "../src/storage/s3_store.ts";
import { serveArtifact } from "../src/client_api/download.ts";
import { createProject } from "../src/projects/projects.ts";
import { listReleasesByProject } from "../src/releases/releases.ts";
import { createAdminTestApp, randomBytes, signedInClient } from "./admin_helpers.ts";
import { downloadCount, seedKey, seedProject, seedRelease, sha256, sleep } from "./helpers.ts";
import { bucketContents, rgwTest, s3Client } from "./rgw.ts";
import { makeDataTempDir, runTask } from "./server_process.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { join } from "node:path";
import { createStore } from "../src/kv/store.ts";

const MiB = 1024 * 1024;

/** `total` bytes in `chunk`-sized pieces, then an error when `failAfter` bytes were sent. */
function source(bytes: Uint8Array, chunk = 64 * 1024, failAfter = Infinity) {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (offset >= failAfter) return c.error(new Error("connection reset"));
      if (offset >= bytes.length) return c.close();
      c.enqueue(bytes.slice(offset, offset + chunk));
      offset += chunk;
    },
  });
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

rgwTest("s3 backend against radosgw", async (t, rgw) => {
  const s3 = await rgw.bucket({ prefix: "artifacts/" });
  const store: S3ArtifactStore = await createS3Store(s3, 1024 ** 3);

  await t.step("a multipart upload (3 parts) keeps bytes, SHA-256 and size", async () => {
    const bytes = randomBytes(20 * MiB + 123);
    const stored = await store.save(source(bytes), 64 * MiB);
    assert.equal(stored.size_bytes, bytes.length);
    assert.equal(stored.checksum_sha256, sha256(bytes));
    assert.deepEqual(await bucketContents(s3), {
      objects: [`artifacts/${stored.storage_key}`],
      uploads: [],
    });
    const opened = await store.open(stored.storage_key);
    assert.equal(opened?.size, bytes.length);
    assert.deepEqual(await readAll(await opened!.read(0, bytes.length)), bytes);
    const middle = await store.open(stored.storage_key);
    assert.deepEqual(
      await readAll(await middle!.read(9 * MiB, 1000)),
      bytes.subarray(9 * MiB, 9 * MiB + 1000),
    );
    await store.remove(stored.storage_key);
    assert.equal(await store.open(stored.storage_key), null);
    await store.remove(stored.storage_key); // twice is fine
  });

  await t.step(
    "over the limit while streaming: refused, upload aborted, nothing kept",
    async () => {
      const bytes = randomBytes(18 * MiB);
      await assert.rejects(store.save(source(bytes), 17 * MiB), UploadTooLargeError);
      await assert.rejects(store.save(source(bytes.subarray(0, 11)), 10), UploadTooLargeError);
      assert.deepEqual(await bucketContents(s3), { objects: [], uploads: [] });
    },
  );

  await t.step("a client gone mid-upload aborts the multipart upload", async () => {
    const bytes = randomBytes(20 * MiB);
    await assert.rejects(store.save(source(bytes, 64 * 1024, 17 * MiB), 64 * MiB), /reset/);
    await assert.rejects(store.save(source(new Uint8Array(0)), 10), EmptyUploadError);
    assert.deepEqual(await bucketContents(s3), { objects: [], uploads: [] });
  });

  await t.step("missing and malformed keys open as null", async () => {
    assert.equal(await store.open(crypto.randomUUID()), null);
    assert.equal(await store.open("../etc/passwd"), null);
  });

  await t.step("start-up: a wrong bucket or secret stops with one line", async () => {
    const dataDir = await makeDataTempDir("test-s3-start");
    try {
      for (
        const [env, expected] of [
          [{ ...rgw.env(s3), APP_S3_BUCKET: "no-such-bucket" }, /cannot reach bucket/],
          [{ ...rgw.env(s3), APP_S3_SECRET_ACCESS_KEY: "wrong" }, /cannot reach bucket/],
        ] as const
      ) {
        const run = await runTask(["start"], {
          ...env,
          APP_DATA_DIR: dataDir,
          APP_PORT: "0",
          APP_HOST: "127.0.0.1",
          APP_ADMIN_PASSWORD: "test-password-123",
        });
        assert.equal(run.code, 1);
        const lines = run.stderr.trim().split("\n");
        assert.equal(lines.length, 1, run.stderr);
        assert.match(lines[0], /^cannot start: APP_STORAGE=s3: /);
        assert.match(lines[0], expected);
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });

  await t.step("service: upload through the admin form, download by the rules", async () => {
    const bucket = await rgw.bucket();
    const artifacts = await createS3Store(bucket, 64 * MiB);
    await using app = await createAdminTestApp({ maxUploadBytes: 12 * MiB }, { artifacts });
    const project = await seedProject(app, { slug: "app" });
    const client = await signedInClient(app);
    await client.page("/admin/projects/app");
    const bytes = randomBytes(9 * MiB + 7);
    const res = await client.upload("/admin/projects/app/releases", [
      ["csrf_token", client.csrfToken],
      ["version", "1.0.0"],
      [
        "file",
        new File([bytes as BlobPart], "App Setup.exe", { type: "application/x-msdownload" }),
      ],
    ]);
    assert.equal(res.status, 303);
    const [release] = await listReleasesByProject(app.store, project.id);
    assert.equal(release.checksum_sha256, sha256(bytes));
    assert.equal(release.size_bytes, bytes.length);

    const tooBig = await client.upload("/admin/projects/app/releases", [
      ["csrf_token", client.csrfToken],
      ["version", "2.0.0"],
      ["file", new File([randomBytes(13 * MiB) as BlobPart], "big.bin")],
    ]);
    assert.equal(tooBig.status, 413);
    await tooBig.body?.cancel();
    assert.deepEqual(await bucketContents(bucket), {
      objects: [release.storage_key],
      uploads: [],
    });

    const { secret } = await seedKey(app);
    const path = `/api/v1/releases/${release.id}/download`;
    const whole = await app.request(path, secret);
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get("etag"), `"${release.checksum_sha256}"`);
    assert.equal(whole.headers.get("content-length"), String(bytes.length));
    assert.match(whole.headers.get("content-disposition")!, /App Setup\.exe/);
    assert.equal(sha256(new Uint8Array(await whole.arrayBuffer())), release.checksum_sha256);

    const part = await app.request(path, secret, { headers: { range: "bytes=100-199" } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get("content-range"), `bytes 100-199/${bytes.length}`);
    assert.deepEqual(new Uint8Array(await part.arrayBuffer()), bytes.subarray(100, 200));

    const stale = await app.request(path, secret, {
      headers: { range: "bytes=100-199", "if-range": '"other"' },
    });
    assert.equal(stale.status, 200);
    await stale.body?.cancel();

    const head = await app.request(path, secret, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-length"), String(bytes.length));

    const beyond = await app.request(path, secret, { headers: { range: "bytes=99999999-" } });
    assert.equal(beyond.status, 416);
    await beyond.body?.cancel();
  });

  await t.step("download counts, a missing object is 404", async () => {
    const bucket = await rgw.bucket();
    const artifacts = await createS3Store(bucket, 64 * MiB);
    await using app = await createAdminTestApp({}, { artifacts });
    const project = await seedProject(app, { slug: "app" });
    const release = await seedRelease(app, project.id, "1.0", randomBytes(1000));
    const { secret } = await seedKey(app);
    const path = `/api/v1/releases/${release.id}/download`;
    await (await app.request(path, secret)).arrayBuffer();
    await (await app.request(path, secret, { headers: { range: "bytes=0-9" } }))
      .arrayBuffer();
    await (await app.request(path, secret, { method: "HEAD" })).body?.cancel();
    assert.equal(await downloadCount(app.store, release.id), 1);
    await artifacts.remove(release.storage_key);
    const gone = await app.request(path, secret);
    assert.equal(gone.status, 404);
    assert.deepEqual(await gone.json(), { error: "release not found" });
  });

  await t.step("sweep: old unfinished uploads and unreferenced objects go", async () => {
    const bucket = await rgw.bucket({ prefix: "a/", sweepAfterSeconds: 1 });
    const store = await createS3Store(bucket, 64 * MiB);
    const young = await createS3Store({ ...bucket, sweepAfterSeconds: 3600 }, 64 * MiB);
    const kv = await Deno.openKv(":memory:");
    const records = createStore(kv);
    try {
      const project = await createProject(records, { name: "App", slug: "app" });
      const kept = await publishRelease(records, store, {
        release: { project_id: project.id, version: "1", filename: "a.bin" },
        source: source(randomBytes(1000)),
        maxBytes: MiB,
      });
      const orphan = await store.save(source(randomBytes(1000)), MiB);
      // An upload cut by a crash: one part sent, never completed nor aborted.
      const client = s3Client(bucket);
      const created = await client.send(
        new CreateMultipartUploadCommand({
          Bucket: bucket.bucket,
          Key: `a/${crypto.randomUUID()}`,
        }),
      );
      await client.send(
        new UploadPartCommand({
          Bucket: bucket.bucket,
          Key: created.Key,
          UploadId: created.UploadId,
          PartNumber: 1,
          Body: randomBytes(1000),
        }),
      );
      assert.deepEqual(await sweepStore(records, young), {
        removedUploads: 0,
        removedArtifacts: 0,
      });
      await sleep(2100);
      assert.deepEqual(await sweepStore(records, store), {
        removedUploads: 1,
        removedArtifacts: 1,
      });
      assert.deepEqual(await bucketContents(bucket), {
        objects: [`a/${kept.storage_key}`],
        uploads: [],
      });
      assert.equal(await store.open(orphan.storage_key), null);
    } finally {
      kv.close();
    }
  });

  await t.step("backup and restore cover s3, each object checked by SHA-256", async () => {
    const root = await makeDataTempDir("test-s3-backup");
    try {
      const origin = await rgw.bucket({ prefix: "uds/" });
      const store = await createS3Store(origin, 64 * MiB);
      await Deno.mkdir(join(root, "source"));
      const kv = await Deno.openKv(join(root, "source", "kv.sqlite3"));
      const records = createStore(kv);
      const project = await createProject(records, { name: "App", slug: "app" });
      const bytes = [randomBytes(9 * MiB), randomBytes(1234)];
      for (const [i, b] of bytes.entries()) {
        await publishRelease(records, store, {
          release: { project_id: project.id, version: `${i}`, filename: "a.bin" },
          source: source(b),
          maxBytes: 64 * MiB,
        });
      }
      kv.close();
      const env = (s3: S3Config, dataDir: string) => ({
        ...rgw.env(s3),
        APP_DATA_DIR: join(root, dataDir),
      });
      const backup = await runTask(["backup", join(root, "backup")], env(origin, "source"));
      assert.equal(backup.code, 0, backup.stderr);
      assert.match(backup.stdout, /2 artifacts \(\d+ bytes\), all SHA-256 verified/);

      const target = await rgw.bucket();
      const restored = await runTask(["restore", join(root, "backup")], env(target, "target"));
      assert.equal(restored.code, 0, restored.stderr);
      const targetStore = await createS3Store(target, 64 * MiB);
      const targetKv = await Deno.openKv(join(root, "target", "kv.sqlite3"));
      try {
        const releases = await listReleasesByProject(createStore(targetKv), project.id);
        assert.equal(releases.length, 2);
        for (const release of releases) {
          const opened = await targetStore.open(release.storage_key);
          const got = await readAll(await opened!.read(0, opened!.size));
          assert.equal(sha256(got), release.checksum_sha256);
        }
      } finally {
        targetKv.close();
      }

      // A bucket that holds anything is refused; a damaged artifact leaves the bucket empty.
      const again = await runTask(["restore", join(root, "backup")], env(target, "again"));
      assert.equal(again.code, 1);
      assert.match(again.stderr, /is not empty .*empty bucket/);
      const [first] = (await Array.fromAsync(Deno.readDir(join(root, "backup", "artifacts"))))
        .map((e) => e.name).sort();
      await Deno.writeTextFile(join(root, "backup", "artifacts", first), "tampered");
      const fresh = await rgw.bucket();
      const damaged = await runTask(["restore", join(root, "backup")], env(fresh, "damaged"));
      assert.equal(damaged.code, 1);
      assert.match(damaged.stderr, /damaged/);
      assert.deepEqual(await bucketContents(fresh), { objects: [], uploads: [] });
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });

  await t.step("migrate-artifacts moves a data dir's artifacts fs -> s3 and back", async () => {
    const root = await makeDataTempDir("test-s3-migrate");
    try {
      const fx = await openDataDir(root);
      const project = await fx.project({ name: "App", slug: "app" });
      const one = await fx.release(project.id, "1", randomBytes(3 * MiB));
      const two = await fx.release(project.id, "2", randomBytes(10));
      fx.close();
      const bucket = await rgw.bucket({ prefix: "moved/" });
      const env = { ...rgw.env(bucket), APP_DATA_DIR: root };
      const there = await runTask(["migrate-artifacts", "fs-to-s3"], env);
      assert.equal(there.code, 0, there.stderr);
      assert.match(there.stdout, /2 artifacts copied .* 0 already there/);
      assert.deepEqual(
        (await bucketContents(bucket)).objects,
        [`moved/${one.storage_key}`, `moved/${two.storage_key}`].sort(),
      );
      const rerun = await runTask(["migrate-artifacts", "fs-to-s3"], env);
      assert.match(rerun.stdout, /0 artifacts copied .* 2 already there/);

      // Back: into an empty artifacts dir, byte for byte.
      const files = join(root, "artifacts");
      const before = await Deno.readFile(join(files, one.storage_key));
      await Deno.remove(files, { recursive: true });
      const back = await runTask(["migrate-artifacts", "s3-to-fs"], env);
      assert.equal(back.code, 0, back.stderr);
      assert.deepEqual(await Deno.readFile(join(files, one.storage_key)), before);
      assert.equal(
        sha256(await Deno.readFile(join(files, two.storage_key))),
        two.checksum_sha256,
      );

      const wrong = await runTask(["migrate-artifacts", "sideways"], env);
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /expected fs-to-s3 or s3-to-fs/);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });

  await t.step("redirect mode: 302 to a presigned URL only after every check", async () => {
    const bucket = await rgw.bucket();
    const artifacts = await createS3Store(bucket, 64 * MiB);
    await using app = await createAdminTestApp({
      storage: "s3",
      downloadMode: "redirect",
      downloadUrlTtlSeconds: 60,
    }, { artifacts });
    const project = await seedProject(app, { slug: "app" });
    const other = await seedProject(app, { slug: "other" });
    const bytes = randomBytes(300_000);
    const release = await seedRelease(app, project.id, "1.0", bytes, {
      filename: "App Setup.exe",
      content_type: "application/x-msdownload",
    });
    const hidden = await seedRelease(app, other.id, "1.0", randomBytes(10));
    const { secret } = await seedKey(app, {
      scope_mode: "project_allow_list",
      project_ids: [project.id],
    });
    const { secret: noDownload } = await seedKey(app, { can_download: false });
    const path = `/api/v1/releases/${release.id}/download`;

    const redirect = await app.request(path, secret);
    assert.equal(redirect.status, 302);
    const location = redirect.headers.get("location")!;
    assert.ok(location.startsWith(`${bucket.endpoint}/${bucket.bucket}/`), location);
    assert.match(location, /X-Amz-Expires=60/);
    const followed = await fetch(location);
    assert.equal(followed.status, 200);
    assert.match(followed.headers.get("content-disposition")!, /App Setup\.exe/);
    assert.equal(followed.headers.get("content-type"), "application/x-msdownload");
    assert.equal(sha256(new Uint8Array(await followed.arrayBuffer())), sha256(bytes));

    const ranged = await fetch(location, { headers: { range: "bytes=10-19" } });
    assert.equal(ranged.status, 206);
    assert.deepEqual(new Uint8Array(await ranged.arrayBuffer()), bytes.subarray(10, 20));

    const tampered = await fetch(
      location.replace(
        /X-Amz-Signature=[0-9a-f]/,
        (m) => m.endsWith("0") ? `${m.slice(0, -1)}1` : `${m.slice(0, -1)}0`,
      ),
    );
    assert.equal(tampered.status, 403);
    await tampered.body?.cancel();

    // No URL for a key that may not download or cannot see the release.
    for (
      const [key, target, status] of [
        [noDownload, path, 403],
        [secret, `/api/v1/releases/${hidden.id}/download`, 404],
        [undefined, path, 401],
      ] as const
    ) {
      const res = await app.request(target, key);
      assert.equal(res.status, status);
      assert.equal(res.headers.get("location"), null);
      await res.body?.cancel();
    }

    // HEAD is answered by the service; a Range refused by If-Range is streamed whole.
    const head = await app.request(path, secret, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-length"), String(bytes.length));
    const stale = await app.request(path, secret, {
      headers: { range: "bytes=0-9", "if-range": '"older"' },
    });
    assert.equal(stale.status, 200);
    assert.equal(sha256(new Uint8Array(await stale.arrayBuffer())), sha256(bytes));

    assert.equal(await downloadCount(app.store, release.id), 2);

    // A multipart object: radosgw's own ETag is "<md5>-<parts>", and radosgw ignores If-Range.
    const large = randomBytes(9 * MiB + 7);
    const multipart = await seedRelease(app, project.id, "2.0", large);
    const largePath = `/api/v1/releases/${multipart.id}/download`;
    const first = await app.request(largePath, secret);
    assert.equal(first.status, 302);
    const fromStore = await fetch(first.headers.get("location")!);
    const storeEtag = fromStore.headers.get("etag")!;
    assert.match(storeEtag, /^"[0-9a-f]{32}-2"$/);
    // The client got half of it, then resumes through the service with either validator.
    const half = new Uint8Array(await fromStore.arrayBuffer()).subarray(0, 5 * MiB);
    for (const validator of [storeEtag, `"${multipart.checksum_sha256}"`]) {
      const resumed = await app.request(largePath, secret, {
        headers: { range: `bytes=${half.length}-`, "if-range": validator },
      });
      assert.equal(resumed.status, 302, `a resume with ${validator} is handed to the store`);
      const rest = await fetch(resumed.headers.get("location")!, {
        headers: { range: `bytes=${half.length}-`, "if-range": validator },
      });
      assert.equal(rest.status, 206);
      const whole = new Uint8Array(large.length);
      whole.set(half);
      whole.set(new Uint8Array(await rest.arrayBuffer()), half.length);
      assert.equal(sha256(whole), multipart.checksum_sha256);
    }
    // The first GET and both resumptions to the end count.
    assert.equal(await downloadCount(app.store, multipart.id), 3);
    // Streamed by the service (stream mode), a resume with the store's ETag is a 206 too.
    const streamed = await serveArtifact(
      multipart,
      new Request("http://x/", {
        headers: { range: `bytes=${half.length}-`, "if-range": storeEtag },
      }),
      {
        artifacts,
        delivery: { mode: "stream", urlTtlSeconds: 60, xAccelPrefix: "/_uds_artifacts/" },
      },
    );
    assert.equal(streamed.response.status, 206);
    assert.equal(streamed.countsAsDownload, true);
    await streamed.response.body?.cancel();
  });
});
