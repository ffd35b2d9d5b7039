/**
 * Issue 18 item 2 against the real server (fs): a download in flight while
 * its release is deleted finishes complete (or fails, never short), and a
 * kill -9 during deletes leaves every remaining release with its complete
 * file; the orphans it may leave are swept at the next start.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { AdminClient, httpSender, randomBytes } from "./admin_helpers.ts";
import { readRest } from "./helpers.ts";
import { makeDataTempDir, type ServerProcess, startServer } from "./server_process.ts";

const PASSWORD = "test-password-123";

async function artifactState(dataDir: string) {
  const dir = join(dataDir, "artifacts");
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.startsWith(".")) names.push(entry.name);
  }
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  try {
    const releases: Array<{ id: number; storage_key: string; size_bytes: number }> = [];
    for await (const entry of kv.list<typeof releases[0]>({ prefix: ["releases"] })) {
      releases.push(entry.value);
    }
    const referenced = new Set(releases.map((release) => release.storage_key));
    const broken: string[] = [];
    for (const release of releases) {
      const size = await Deno.stat(join(dir, release.storage_key)).then((s) => s.size, () => -1);
      if (size !== release.size_bytes) broken.push(release.storage_key);
    }
    return {
      releases,
      orphans: names.filter((name) => !referenced.has(name)),
      broken,
    };
  } finally {
    kv.close();
  }
}

async function upload(admin: AdminClient, version: string, bytes: Uint8Array): Promise<void> {
  const res = await admin.upload("/admin/projects/desktop/releases", [
    ["csrf_token", admin.csrfToken],
    ["version", version],
    ["file", new File([bytes as BlobPart], `${version}.bin`)],
  ]);
  await res.body?.cancel();
  assert.equal(res.status, 303, `upload ${version}`);
}

async function releaseIds(dataDir: string): Promise<number[]> {
  return (await artifactState(dataDir)).releases.map((release) => release.id);
}

Deno.test({
  name: "deleting releases on the real server: a download in flight, kill -9 during deletes",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const dataDir = await makeDataTempDir("lifecycle");
    let server: ServerProcess = await startServer(dataDir, { APP_FS_SWEEP_AFTER_SECONDS: "3600" });
    try {
      const admin = new AdminClient(httpSender([server.baseUrl]));
      assert.equal((await admin.signIn("admin", PASSWORD)).status, 303);
      assert.equal(
        (await admin.post("/admin/projects", { name: "Desktop", slug: "desktop" })).status,
        303,
      );
      const created = await admin.post("/admin/api-keys", {
        name: "client",
        can_download: "on",
        scope_mode: "all_projects",
      });
      const secret = /data-api-key="([^"]+)"/.exec(await created.text())?.[1];
      assert.ok(secret);
      await admin.page("/admin/projects/desktop");

      await t.step("a download in flight during the delete finishes complete", async () => {
        const big = randomBytes(24 * 1024 * 1024);
        await upload(admin, "big", big);
        await upload(admin, "newer", randomBytes(1024));
        const [bigId] = await releaseIds(dataDir);
        const res = await fetch(`${server.baseUrl}/api/v1/releases/${bigId}/download`, {
          headers: { authorization: `Bearer ${secret}` },
        });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-length"), String(big.length));
        const reader = res.body!.getReader();
        const hash = createHash("sha256");
        let received = 0;
        const first = await reader.read();
        hash.update(first.value!);
        received += first.value!.length;
        assert.ok(received < big.length, "the download is still in flight");
        const deleted = await admin.post(`/admin/releases/${bigId}/delete`);
        assert.equal(deleted.status, 303);
        const gone = await fetch(`${server.baseUrl}/api/v1/releases/${bigId}/download`, {
          headers: { authorization: `Bearer ${secret}` },
        });
        assert.equal(gone.status, 404);
        await gone.body?.cancel();
        // A cut is clean (the client sees an error, not a short "complete" file), but
        // fs: the open file outlives its unlinking, so the download completes.
        const rest = await readRest(reader, hash);
        received += rest.bytes;
        assert.equal(rest.failed, false);
        {
          assert.equal(received, big.length);
          assert.equal(hash.digest("hex"), createHash("sha256").update(big).digest("hex"));
        }
        const state = await artifactState(dataDir);
        assert.deepEqual(state.orphans, [], "the deleted file is gone");
        assert.deepEqual(state.broken, []);
      });

      await t.step("kill -9 during deletes: whole releases or none, orphans swept", async () => {
        for (let i = 0; i < 40; i++) await upload(admin, `v${i}`, randomBytes(64 * 1024));
        const ids = await releaseIds(dataDir);
        let deleted = 0;
        let cut = 0;
        const queue = [...ids];
        const deleting = Promise.all(Array.from({ length: 8 }, async () => {
          for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
            try {
              const res = await admin.post(`/admin/releases/${id}/delete`, {
                confirm_latest: "on",
              });
              await res.body?.cancel();
              if (res.status === 303) deleted++;
              else cut++;
            } catch {
              cut++;
            }
          }
        }));
        await new Promise((resolve) => setTimeout(resolve, 60));
        await server.crash();
        await deleting;
        const before = await artifactState(dataDir);
        assert.deepEqual(before.broken, [], "every release left has its complete file");
        assert.ok(before.releases.length < ids.length, "some deletes were done before the crash");
        // The next start with no minimum age sweeps what the crash left.
        server = await startServer(dataDir, { APP_FS_SWEEP_AFTER_SECONDS: "0" });
        const deadline = Date.now() + 15_000;
        while ((await artifactState(dataDir)).orphans.length > 0 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const after = await artifactState(dataDir);
        assert.deepEqual(after.orphans, []);
        assert.deepEqual(after.broken, []);
        assert.equal(after.releases.length, before.releases.length);
        console.log(
          `  kill -9 after ${deleted} of ${ids.length} deletes (${cut} cut): ` +
            `${before.releases.length} releases whole, ${before.orphans.length} orphans swept`,
        );
      });
    } finally {
      await server.stop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
