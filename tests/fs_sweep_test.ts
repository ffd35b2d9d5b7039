/**
 * Issue 19 item 5: the fs store's sweep removes complete artifact files that
 * no release references (a crash between the rename and the release commit),
 * never the file of an upload whose release is still being committed (in this
 * or another process on the data dir), and only once older than
 * APP_FS_SWEEP_AFTER_SECONDS. End to end: kill -9 of a real server during
 * uploads, and two instances on one data dir sweeping while both take uploads.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { saveArtifact } from "../src/storage/artifacts.ts";
import { createFsStore, publishRelease, sweepStore } from "../src/storage/mod.ts";
import { createProject } from "../src/projects/projects.ts";
import { createRelease, listStorageKeys } from "../src/releases/releases.ts";
import { AdminClient, httpSender, randomBytes } from "./admin_helpers.ts";
import { makeDataTempDir, type ServerProcess, startServer } from "./server_process.ts";
import { waitFor } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

async function artifactNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.startsWith(".")) names.push(entry.name);
  }
  return names.sort();
}

Deno.test("fs sweep: unreferenced files go; held, referenced and young ones stay", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "uds-fs-sweep-" });
  const kv = await Deno.openKv(":memory:");
  const records = createStore(kv);
  const artifactsModule = new URL("../src/storage/artifacts.ts", import.meta.url).href;
  try {
    const store = createFsStore(dir, { sweepAfterMs: 0 });
    const project = await createProject(records, { name: "App", slug: "app" });
    const input = { project_id: project.id, filename: "a.bin" };
    const bytes = () => ReadableStream.from([randomBytes(1000)]);

    await t.step(
      "an orphan goes; a committed file and one still being committed stay",
      async () => {
        const kept = await publishRelease(records, store, {
          release: { ...input, version: "1" },
          source: bytes(),
          maxBytes: 1 << 20,
        });
        // What a crash between the rename and the commit leaves: a complete file, no lock, no release.
        const orphan = await saveArtifact(dir, bytes(), { maxBytes: 1 << 20 });
        // An upload whose release is not committed yet (its writer still holds the file).
        const pending = await store.save(bytes(), 1 << 20);

        const young = createFsStore(dir, { sweepAfterMs: 60_000 });
        assert.deepEqual(await sweepStore(records, young), {
          removedUploads: 0,
          removedArtifacts: 0,
        });
        assert.deepEqual(await sweepStore(records, store), {
          removedUploads: 0,
          removedArtifacts: 1,
        });
        assert.deepEqual(
          await artifactNames(dir),
          [kept.storage_key, pending.storage_key].sort(),
          `the orphan ${orphan.storage_key} is gone`,
        );

        await createRelease(records, { ...input, version: "2", ...pending });
        store.settle!(pending.storage_key);
        assert.deepEqual(await sweepStore(records, store), {
          removedUploads: 0,
          removedArtifacts: 0,
        });
        assert.equal((await listStorageKeys(records)).size, 2);
        assert.equal((await artifactNames(dir)).length, 2);
      },
    );

    await t.step(
      "another process's file is kept while it lives, swept once it is killed",
      async () => {
        const child = new Deno.Command(Deno.execPath(), {
          args: [
            "eval",
            `import { saveArtifactLocked } from "${artifactsModule}";
           setInterval(() => {}, 1000);
           const { artifact } = await saveArtifactLocked(
             ${JSON.stringify(dir)},
             ReadableStream.from([new Uint8Array(5000)]),
             { maxBytes: 1 << 20 },
           );
           console.log(artifact.storage_key);`,
          ],
          stdin: "null",
          stdout: "piped",
          stderr: "null",
        }).spawn();
        const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
        const storageKey = (await reader.read()).value!.trim();
        assert.ok((await artifactNames(dir)).includes(storageKey));
        // Alive and holding the file (as between the rename and its commit): kept.
        assert.deepEqual(await sweepStore(records, store), {
          removedUploads: 0,
          removedArtifacts: 0,
        });
        assert.ok((await artifactNames(dir)).includes(storageKey));
        child.kill("SIGKILL");
        await child.status;
        await reader.cancel();
        assert.deepEqual(await sweepStore(records, store), {
          removedUploads: 0,
          removedArtifacts: 1,
        });
        assert.ok(!(await artifactNames(dir)).includes(storageKey));
      },
    );
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** Sessions that upload small releases to `desktop` until `stop` is set; counts the 303s. */
async function uploadLoad(
  baseUrls: () => string[],
  admin: AdminClient,
  sessions: number,
  stop: { now: boolean },
): Promise<{ ok: number; failed: number }> {
  const result = { ok: 0, failed: 0 };
  let n = 0;
  await Promise.all(Array.from({ length: sessions }, async () => {
    while (!stop.now) {
      const urls = baseUrls();
      const client = new AdminClient(httpSender([urls[n % urls.length]]));
      for (const [name, value] of admin.cookies) client.cookies.set(name, value);
      client.csrfToken = admin.csrfToken;
      const version = `v${n++}`;
      try {
        const res = await client.upload("/admin/projects/desktop/releases", [
          ["csrf_token", admin.csrfToken],
          ["version", version],
          ["file", new File([randomBytes(48 * 1024) as BlobPart], `${version}.bin`)],
        ]);
        await res.body?.cancel();
        if (res.status === 303) result.ok++;
        else result.failed++;
      } catch {
        result.failed++; // the instance was killed under it
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }));
  return result;
}

/** Files not referenced by any release, and releases whose file is missing or of another size. */
async function orphansAndBroken(dataDir: string) {
  const dir = join(dataDir, "artifacts");
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  try {
    const releases: Array<{ storage_key: string; size_bytes: number }> = [];
    for await (const entry of kv.list<typeof releases[0]>({ prefix: ["releases"] })) {
      releases.push(entry.value);
    }
    const names = new Set(await artifactNames(dir));
    const referenced = new Set(releases.map((r) => r.storage_key));
    const broken: string[] = [];
    for (const release of releases) {
      const size = await Deno.stat(join(dir, release.storage_key)).then((s) => s.size, () => -1);
      if (size !== release.size_bytes) broken.push(release.storage_key);
    }
    return {
      releases: releases.length,
      orphans: [...names].filter((name) => !referenced.has(name)),
      broken,
    };
  } finally {
    kv.close();
  }
}

Deno.test({
  name: "fs sweep with real servers: two instances on one data dir, kill -9 during uploads",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const dataDir = await makeDataTempDir("fs-sweep");
    const env = { APP_FS_SWEEP_AFTER_SECONDS: "0" };
    const servers: ServerProcess[] = [];
    try {
      servers.push(await startServer(dataDir, env), await startServer(dataDir, env));
      const urls = () => servers.map((server) => server.baseUrl);
      const admin = new AdminClient(httpSender([servers[0].baseUrl]));
      assert.equal((await admin.signIn("admin", "test-password-123")).status, 303);
      const created = await admin.post("/admin/projects", { name: "Desktop", slug: "desktop" });
      assert.equal(created.status, 303);
      await admin.page("/admin/projects/desktop");

      await t.step(
        "sweeping without pause while both instances take uploads removes none of theirs",
        async () => {
          const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
          const records = createStore(kv);
          const sweeper = createFsStore(join(dataDir, "artifacts"), { sweepAfterMs: 0 });
          const stop = { now: false };
          let sweeps = 0;
          let removed = 0;
          const sweeping = (async () => {
            while (!stop.now) {
              removed += (await sweepStore(records, sweeper)).removedArtifacts;
              sweeps++;
            }
          })();
          const load = uploadLoad(urls, admin, 8, stop);
          await new Promise((resolve) => setTimeout(resolve, 3000));
          stop.now = true;
          const { ok, failed } = await load;
          await sweeping;
          kv.close();
          assert.equal(failed, 0);
          assert.ok(ok > 20, `${ok} uploads`);
          assert.ok(sweeps > 3, `${sweeps} sweeps`);
          assert.equal(removed, 0, "nothing of a live upload was removed");
          const state = await orphansAndBroken(dataDir);
          assert.deepEqual(state.broken, [], "every release keeps its complete file");
          assert.deepEqual(state.orphans, []);
          console.log(`  ${ok} uploads through 2 instances during ${sweeps} sweeps: no file lost`);
        },
      );

      await t.step(
        "kill -9 during uploads: the restarted instance's sweep leaves no orphan",
        async () => {
          const stop = { now: false };
          const load = uploadLoad(urls, admin, 16, stop);
          for (let kill = 0; kill < 4; kill++) {
            await new Promise((resolve) => setTimeout(resolve, 600));
            await servers[0].crash();
            servers[0] = await startServer(dataDir, { APP_FS_SWEEP_AFTER_SECONDS: "3600" });
          }
          await new Promise((resolve) => setTimeout(resolve, 300));
          stop.now = true;
          const { ok, failed } = await load;
          const before = await orphansAndBroken(dataDir);
          assert.deepEqual(before.broken, []);
          // A restart with the default age keeps young orphans; one with 0 s removes them all.
          await servers[0].stop();
          servers[0] = await startServer(dataDir, env);
          await waitFor("the start-up sweep", async () => {
            return (await orphansAndBroken(dataDir)).orphans.length === 0;
          });
          const after = await orphansAndBroken(dataDir);
          assert.deepEqual(after.broken, []);
          assert.equal(after.releases, before.releases);
          if (before.orphans.length > 0) {
            assert.match(
              servers[0].output(),
              new RegExp(`"removed_artifacts":${before.orphans.length}`),
            );
          }
          console.log(
            `  4 kills during ${ok} uploads (${failed} cut): ${before.orphans.length} orphans, ` +
              "all swept at the next start",
          );
        },
      );
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
