/**
 * Block maps (src/blockmap/): the service's are block for block those of
 * electron-builder's own `app-builder blockmap` (npm app-builder-bin, pinned
 * below) for the same file, however the bytes arrive; the background work
 * builds each release's once and never replaces it; the electron feed's file
 * URLs (`/feeds/electron/{slug}/files/{version}/{filename}`) and `.blockmap`
 * beside every file URL, behind the key rules; the storage sweep keeps them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { parse } from "yaml";
import { buildBlockMap, createBlockMapBuilder } from "../src/blockmap/build.ts";
import { runBlockMapBuild } from "../src/blockmap/background.ts";
import {
  BLOCK_MAP_PIECE_BYTES,
  createBlockMap,
  getBlockMapByRelease,
  getBlockMapBytes,
} from "../src/artifact_records/block_maps.ts";
import { assertError } from "./asserts.ts";
import { appBuilderBlockMap, installAppBuilder } from "./app_builder.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";
import { createAdminTestApp, listArtifactFiles, signedInClient } from "./admin_helpers.ts";
import { MAX_BLOCK_MAP_UNPACKED_BYTES } from "../src/storage/block_map_part.ts";
import { concatBytes } from "../src/lib/bytes.ts";
import { listReleasesByProject } from "../src/releases/releases.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

/** Bytes with long repeats and changes, so that blocks of every size occur. */
function sample(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    if (i % 5000 === 0) x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = (i * (x & 7) + (x >>> 16) + (i >> 11)) & 0xff;
    if ((i & 1023) === 0) x ^= i;
  }
  const noise = bytes.subarray(length >> 1, (length >> 1) + 200_000);
  for (let at = 0; at < noise.length; at += 65_536) {
    crypto.getRandomValues(noise.subarray(at, at + 65_536));
  }
  return bytes;
}

Deno.test("block maps are app-builder's, block for block", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "uds-blockmap-" });
  try {
    const appBuilder = await installAppBuilder();
    for (const [name, length] of [["small", 20_000], ["odd", 3_333_333], ["tiny", 100]] as const) {
      await t.step(`${name}: ${length} bytes`, async () => {
        const bytes = sample(length, length);
        const path = join(root, name);
        await Deno.writeFile(path, bytes);
        const theirs = await appBuilderBlockMap(appBuilder, path);
        // Fed in pieces of every size, as uploads arrive.
        const builder = await createBlockMapBuilder();
        for (let at = 0, step = 1; at < length; at += step, step = (step * 7 + 3) % 70_001) {
          builder.update(bytes.slice(at, at + step));
        }
        assert.deepEqual(builder.finish(), theirs);
        const { encoded } = await buildBlockMap(ReadableStream.from([bytes]));
        assert.deepEqual(JSON.parse(new TextDecoder().decode(gunzipSync(encoded))), theirs);
      });
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("block maps: built in the background, served beside every file URL", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const other = await seedProject(app, { slug: "other" });
  const old = sample(300_000, 1);
  const next = sample(300_000, 2);
  const v1 = await seedRelease(app, project.id, "1.0.0", old, { filename: "App Setup 1.0.0.exe" });
  const v2 = await seedRelease(app, project.id, "1.1.0", next, { filename: "App Setup 1.1.0.exe" });
  const { secret } = await seedKey(app);
  const work = { store: app.store, artifacts: app.artifacts, report: () => {} };
  const newUrl = "/feeds/electron/desktop/files/1.1.0/App%20Setup%201.1.0.exe";
  // What electron-updater derives: the new version replaced by the installed one, plus .blockmap.
  const oldMapUrl = "/feeds/electron/desktop/files/1.0.0/App%20Setup%201.0.0.exe.blockmap";
  const mapOf = async (res: Response) => {
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/octet-stream");
    return JSON.parse(
      new TextDecoder().decode(gunzipSync(new Uint8Array(await res.arrayBuffer()))),
    );
  };

  await t.step("the feed names the file by version; that URL downloads it", async () => {
    const feed = parse(
      await (await app.request("/feeds/electron/desktop/latest.yml", secret)).text(),
    );
    assert.equal(feed.path, newUrl);
    assert.equal(feed.files[0].url, newUrl);
    const res = await app.request(newUrl, secret);
    assert.equal(res.status, 200);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), next);
    // The old URLs keep working.
    const byId = await app.request(`/feeds/files/${v2.id}/App%20Setup%201.1.0.exe`, secret);
    assert.deepEqual(new Uint8Array(await byId.arrayBuffer()), next);
  });

  await t.step(
    "before the background work: 404, the updater downloads the whole file",
    async () => {
      await assertError(
        await app.request(`${newUrl}.blockmap`, secret),
        404,
        "release block map not built yet",
      );
    },
  );

  await t.step("built once for every release, never replaced", async () => {
    const run = await runBlockMapBuild(work);
    assert.deepEqual(run, { outcome: "done", built: 2, skipped: 0, lastId: v2.id });
    const record = await getBlockMapByRelease(app.store, v1.id);
    assert.equal(record?.made_by, "service");
    assert.deepEqual((await runBlockMapBuild(work)).built, 0);
    assert.deepEqual(await getBlockMapByRelease(app.store, v1.id), record);
  });

  await t.step("beside every file URL: the new one, the rewritten old one, by id", async () => {
    const expected = async (bytes: Uint8Array) =>
      (await buildBlockMap(ReadableStream.from([bytes]))).map;
    assert.deepEqual(
      await mapOf(await app.request(`${newUrl}.blockmap`, secret)),
      await expected(next),
    );
    assert.deepEqual(await mapOf(await app.request(oldMapUrl, secret)), await expected(old));
    assert.deepEqual(
      await mapOf(
        await app.request(`/feeds/files/${v1.id}/App%20Setup%201.0.0.exe.blockmap`, secret),
      ),
      await expected(old),
    );
  });

  await t.step(
    "the key rules apply: 401, 403, scope 404; unknown version or name 404",
    async () => {
      await assertError(await app.request(oldMapUrl), 401, "missing bearer api key");
      const noDownload = await seedKey(app, { can_download: false });
      await assertError(
        await app.request(oldMapUrl, noDownload.secret),
        403,
        "api key permission denied",
      );
      const scoped = await seedKey(app, {
        scope_mode: "project_allow_list",
        project_ids: [other.id],
      });
      await assertError(await app.request(oldMapUrl, scoped.secret), 404, "resource not found");
      await assertError(await app.request(newUrl, scoped.secret), 404, "resource not found");
      for (
        const path of [
          "/feeds/electron/desktop/files/0.9.0/App%20Setup%200.9.0.exe",
          "/feeds/electron/desktop/files/1.1.0/Other.exe",
          "/feeds/electron/nope/files/1.1.0/App%20Setup%201.1.0.exe",
          "/feeds/electron/desktop/filez/1.1.0/App%20Setup%201.1.0.exe",
        ]
      ) {
        await assertError(await app.request(path, secret), 404, "resource not found");
      }
      const post = await app.request(newUrl, secret, { method: "POST" });
      assert.equal(post.status, 405);
    },
  );

  await t.step("a block map larger than a KV value is kept in pieces", async () => {
    const v3 = await seedRelease(app, project.id, "1.2.0", old, { filename: "big.exe" });
    const bytes = new Uint8Array(BLOCK_MAP_PIECE_BYTES * 12 + 5).map((_, i) => (i * 13) & 0xff);
    assert.equal(
      await createBlockMap(app.store, { releaseId: v3.id, madeBy: "vendor", bytes }),
      true,
    );
    assert.equal(
      await createBlockMap(app.store, { releaseId: v3.id, madeBy: "service", bytes }),
      false,
    );
    assert.deepEqual(await getBlockMapBytes(app.store, v3.id), bytes);
    assert.equal((await getBlockMapByRelease(app.store, v3.id))?.made_by, "vendor");
    const pieces = await Array.fromAsync(app.kv.list({ prefix: ["block_map_pieces", v3.id] }));
    assert.equal(pieces.length, 13, "the losing writer left no pieces");
  });

  await t.step("a deleted release's block map goes at the next start", async () => {
    await app.kv.delete(["releases", v1.id]);
    const run = await runBlockMapBuild(work);
    assert.equal(run.built, 0);
    assert.equal(await getBlockMapByRelease(app.store, v1.id), null);
    const pieces = await Array.fromAsync(app.kv.list({ prefix: ["block_map_pieces", v1.id] }));
    assert.equal(pieces.length, 0);
    assert.notEqual(await getBlockMapByRelease(app.store, v2.id), null);
  });
});

Deno.test("block maps: one the vendor uploads with the release is kept", async (t) => {
  await using app = await createTestApp();
  await seedProject(app, { slug: "desktop" });
  const { secret: token } = await seedPublishToken(app.store);
  const { secret } = await seedKey(app);
  const bytes = sample(200_000, 3);
  const upload = (version: string, blockMap: Uint8Array) => {
    const form = uploadForm({ version }, { bytes, name: `App ${version}.exe` });
    form.append("blockmap", new Blob([blockMap as Uint8Array<ArrayBuffer>]), "x.blockmap");
    return app.request(`${PUBLISH_PREFIX}/projects/desktop/releases`, token, {
      method: "POST",
      body: form,
    });
  };
  // A vendor's map: the right blocks, listed as electron-builder would, encoded its own way.
  const { map } = await buildBlockMap(ReadableStream.from([bytes]));
  const vendor = new Uint8Array(gzipSync(JSON.stringify(map, null, 1)));

  await t.step("kept as uploaded, never replaced by the background build", async () => {
    const res = await upload("1.0.0", vendor);
    assert.equal(res.status, 201, await res.clone().text());
    const { release } = await res.json();
    assert.equal((await getBlockMapByRelease(app.store, release.id))?.made_by, "vendor");
    await runBlockMapBuild({ store: app.store, artifacts: app.artifacts, report: () => {} });
    const served = await app.request(
      `/feeds/electron/desktop/files/1.0.0/App%201.0.0.exe.blockmap`,
      secret,
    );
    assert.deepEqual(new Uint8Array(await served.arrayBuffer()), vendor);
  });

  await t.step("one that is not this file's block map is refused, nothing kept", async () => {
    for (
      const wrong of [
        new TextEncoder().encode("not gzip"),
        new Uint8Array(gzipSync(JSON.stringify({ ...map, version: "1" }))),
        new Uint8Array(
          gzipSync(JSON.stringify({ version: "2", files: [{ ...map.files[0], sizes: [1] }] })),
        ),
      ]
    ) {
      const res = await upload("1.0.1", wrong);
      assert.equal(res.status, 400);
      assert.match((await res.json()).error, /blockmap/);
    }
    const latest = await app.request("/api/v1/projects/desktop/releases/latest", secret);
    assert.equal((await latest.json()).release.version, "1.0.0", "no release was made");
  });
});

Deno.test("block maps: a gzip bomb is refused by both upload surfaces, unpacked only to the limit", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const { secret: token } = await seedPublishToken(app.store);
  const admin = await signedInClient(app);
  await admin.page("/admin/projects/desktop");
  const bytes = sample(200_000, 5);
  // 96 MiB of a valid block map's JSON (one block size repeated) in about 100 KiB of gzip.
  const head = `{"version":"2","files":[{"name":"file","offset":0,"checksums":[],"sizes":[`;
  const unpacked = 96 * 1024 * 1024;
  const filler = new Uint8Array(unpacked - head.length - 4).fill(0x20);
  const bomb = new Uint8Array(
    gzipSync(
      concatBytes([new TextEncoder().encode(head), filler, new TextEncoder().encode("]}]}")]),
    ),
  );
  assert.ok(bomb.byteLength < 200_000, `the bomb is ${bomb.byteLength} bytes`);
  assert.equal(MAX_BLOCK_MAP_UNPACKED_BYTES, 32 * 1024 * 1024);
  const says = /must unpack to at most 32 MiB/;
  const blob = new Blob([bomb as Uint8Array<ArrayBuffer>]);

  await t.step("the publishing API answers 400 and keeps nothing", async () => {
    const form = uploadForm({ version: "1.0.0" }, { bytes, name: "App 1.0.0.exe" });
    form.append("blockmap", blob, "App 1.0.0.exe.blockmap");
    const before = Deno.memoryUsage().rss;
    const res = await app.request(`${PUBLISH_PREFIX}/projects/desktop/releases`, token, {
      method: "POST",
      body: form,
    });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error, /^blockmap: must unpack to at most 32 MiB/);
    const grew = Deno.memoryUsage().rss - before;
    assert.ok(grew < 96 * 1024 * 1024, `memory grew by ${grew} bytes`);
  });

  await t.step("the admin forms re-show the form with the reason and keep nothing", async () => {
    for (const path of ["/admin/projects/desktop/releases", "/admin/upload"]) {
      const res = await admin.upload(path, [
        ["csrf_token", admin.csrfToken],
        ...(path === "/admin/upload" ? [["project", "desktop"] as [string, string]] : []),
        ["version", "1.0.0"],
        ["file", new File([bytes as Uint8Array<ArrayBuffer>], "App 1.0.0.exe")],
        ["blockmap", new File([blob], "App 1.0.0.exe.blockmap")],
      ]);
      assert.equal(res.status, 400, path);
      assert.match(await res.text(), says, path);
    }
  });

  await t.step("no release and no stored file", async () => {
    assert.deepEqual(await listReleasesByProject(app.store, project.id), []);
    assert.deepEqual(await listArtifactFiles(app), []);
  });
});
