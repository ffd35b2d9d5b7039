/**
 * Issue 18 item 2's remaining checks: a backup taken before deletes restores
 * what they deleted (records, counts, files); deleting on s3 (radosgw)
 * removes the objects, keeps the counts, and a download in flight during the
 * delete finishes complete or fails, never short.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { createBackup } from "../src/backup/backup.ts";
import { restoreBackup } from "../src/backup/restore.ts";
import { deleteProject, deleteRelease } from "../src/lifecycle/delete.ts";
import { createFsStore } from "../src/storage/mod.ts";
import { createS3Store } from "../src/storage/s3_store.ts";
import { getCounts, getProjectBytes, getProjectReleaseCount } from "../src/projects/aggregates.ts";
import { getApiKey } from "../src/credentials/api_keys.ts";
import { deleteApiKey, getDeletedDownloads } from "../src/lifecycle/delete_records.ts";
import { getRelease, listReleasesByProject, setReleaseState } from "../src/releases/releases.ts";
import { createAdminTestApp, randomBytes, signedInClient } from "./admin_helpers.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { downloadCount, readRest, seedKey, seedProject, seedRelease, sha256 } from "./helpers.ts";
import { objectsUnderPrefix, rgwTest } from "./rgw.ts";
import { createStore } from "../src/kv/store.ts";

function location(dataDir: string) {
  return { kvPath: join(dataDir, "kv.sqlite3"), artifactsDir: join(dataDir, "artifacts") };
}

Deno.test("a backup taken before deletes restores what they deleted", async () => {
  const root = await Deno.makeTempDir({ prefix: "uds-delete-backup-" });
  try {
    const source = join(root, "source");
    const fx = await openDataDir(source);
    const app = await fx.project({ name: "App", slug: "app" });
    const gone = await fx.project({ name: "Gone", slug: "gone" });
    const one = await fx.release(app.id, "1.0", new TextEncoder().encode("first"));
    const two = await fx.release(app.id, "2.0", new TextEncoder().encode("second"));
    const old = await fx.release(gone.id, "0.1", new TextEncoder().encode("old"));
    await setReleaseState(fx.store, old.id, "archived");
    const { apiKey } = await fx.key({ name: "ci" });
    const before = {
      counts: await getCounts(fx.store),
      bytes: await getProjectBytes(fx.store, [app.id, gone.id]),
    };
    fx.close();
    const backup = join(root, "backup");
    await createBackup(location(source), backup);

    // The deletes, after the backup.
    const kv = await Deno.openKv(join(source, "kv.sqlite3"));
    const store = createStore(kv);
    const artifacts = createFsStore(join(source, "artifacts"));
    await deleteRelease({ store, artifacts }, two.id, { allowLatest: true });
    await deleteProject({ store, artifacts }, gone.id);
    await deleteApiKey(store, apiKey.id);
    assert.equal(await getRelease(store, two.id), null);
    kv.close();

    const target = join(root, "restored");
    await restoreBackup(backup, location(target));
    const restored = await Deno.openKv(join(target, "kv.sqlite3"));
    const restoredStore = createStore(restored);
    try {
      const releases = await listReleasesByProject(restoredStore, app.id);
      assert.deepEqual(releases.map((r) => r.id).sort(), [one.id, two.id].sort());
      assert.equal((await listReleasesByProject(restoredStore, gone.id))[0]?.id, old.id);
      assert.equal((await getApiKey(restoredStore, apiKey.id))?.name, "ci");
      assert.deepEqual(await getCounts(restoredStore), before.counts);
      assert.deepEqual(await getProjectBytes(restoredStore, [app.id, gone.id]), before.bytes);
      for (const release of [one, two, old]) {
        const bytes = await Deno.readFile(join(target, "artifacts", release.storage_key));
        assert.equal(sha256(bytes), release.checksum_sha256, `release ${release.version}'s file`);
      }
    } finally {
      restored.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

rgwTest("deleting on s3 (radosgw)", async (t, rgw) => {
  const s3 = await rgw.bucket({ prefix: "artifacts/" });
  const artifacts = await createS3Store(s3, 256 * 1024 ** 2);
  await using app = await createAdminTestApp({}, { artifacts });
  const objects = () => objectsUnderPrefix(s3);
  const project = await seedProject(app, { slug: "app" });
  const { secret } = await seedKey(app);
  const client = await signedInClient(app);

  await t.step("a release: its object goes, its downloads stay in the total", async () => {
    const small = await seedRelease(app, project.id, "1.0");
    await seedRelease(app, project.id, "2.0");
    const res = await app.request(`/api/v1/releases/${small.id}/download`, secret);
    await res.arrayBuffer();
    assert.equal(await downloadCount(app.store, small.id), 1);
    assert.ok((await objects()).includes(small.storage_key));
    const deleted = await client.post(`/admin/releases/${small.id}/delete`);
    assert.equal(deleted.status, 303);
    assert.ok(!(await objects()).includes(small.storage_key), "the object is gone");
    assert.equal(await getDeletedDownloads(app.store, project.id), 1);
    const after = await app.request(`/api/v1/releases/${small.id}/download`, secret);
    assert.equal(after.status, 404);
    await after.body?.cancel();
  });

  await t.step("a download in flight finishes complete or fails, never short", async () => {
    const big = randomBytes(16 * 1024 * 1024);
    const release = await seedRelease(app, project.id, "0.9", big, {
      created_at: new Date(Date.now() - 86_400_000).toISOString(),
    });
    const res = await app.request(`/api/v1/releases/${release.id}/download`, secret);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-length"), String(big.length));
    const reader = res.body!.getReader();
    const hash = createHash("sha256");
    const first = await reader.read();
    hash.update(first.value!);
    let received = first.value!.length;
    assert.ok(received < big.length, "still in flight");
    assert.equal((await client.post(`/admin/releases/${release.id}/delete`)).status, 303);
    assert.ok(!(await objects()).includes(release.storage_key));
    const rest = await readRest(reader, hash);
    received += rest.bytes;
    if (!rest.failed) {
      assert.equal(received, big.length, "a finished download has every byte");
      assert.equal(hash.digest("hex"), release.checksum_sha256);
    }
  });

  await t.step("a project with archived releases: every object goes", async () => {
    const other = await seedProject(app, { slug: "other" });
    const a = await seedRelease(app, other.id, "1.0");
    const b = await seedRelease(app, other.id, "1.1");
    await setReleaseState(app.store, a.id, "archived");
    await setReleaseState(app.store, b.id, "archived");
    assert.equal(await getProjectReleaseCount(app.store, other.id), 2);
    const res = await client.post("/admin/projects/other/delete", { confirm_slug: "other" });
    assert.equal(res.status, 303);
    const left = await objects();
    assert.ok(!left.includes(a.storage_key) && !left.includes(b.storage_key));
    assert.equal((await getProjectBytes(app.store, [other.id])).get(other.id), 0);
  });
});
