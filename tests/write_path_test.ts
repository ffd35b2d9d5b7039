/**
 * Issue 19 item 1 against real servers: no write is bounced to the caller for
 * contention. Three instances on one KV file behind a round-robin balancer;
 * 32 admin sessions upload to one project and to a project each, create keys
 * and create projects, all at once: every answer is the success answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { getProjectBySlug } from "../src/projects/projects.ts";
import {
  getLatestRelease,
  isNewerRelease,
  listReleasesByProject,
} from "../src/releases/releases.ts";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import { makeDataTempDir, removedAtEnd, startInstances } from "./server_process.ts";
import { createStore } from "../src/kv/store.ts";

const SESSIONS = 32;
const PASSWORD = "test-password-123";

/** The p99 and the non-success answers of `runs` (each: a status and its milliseconds). */
function summary(runs: Array<{ status: number; ms: number }>, success: number) {
  const times = runs.map((run) => run.ms).sort((a, b) => a - b);
  return {
    refused: runs.filter((run) => run.status !== success).map((run) => run.status),
    p99: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))],
  };
}

async function timed(send: () => Promise<Response>): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await send();
  await res.body?.cancel();
  return { status: res.status, ms: performance.now() - started };
}

Deno.test("issue 19.1: 32 sessions on three instances sharing a KV file: no write refused", async (t) => {
  const dataDir = await makeDataTempDir("write-path-test");
  await using _removed = removedAtEnd(dataDir);
  const servers = await startInstances(3, dataDir);
  try {
    const urls = servers.map((server) => server.baseUrl);
    const clients: AdminClient[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const client = new AdminClient(httpSender(urls));
      assert.equal((await client.signIn("admin", PASSWORD)).status, 303);
      clients.push(client);
    }
    const admin = clients[0];
    await admin.page("/admin/projects");
    assert.equal(
      (await admin.post("/admin/projects", { name: "Shared", slug: "shared" })).status,
      303,
    );

    await t.step("project creation at 32 sessions", async () => {
      const runs = await Promise.all(clients.map(async (client, i) => {
        await client.page("/admin/projects");
        return timed(() => client.post("/admin/projects", { name: `P ${i}`, slug: `p-${i}` }));
      }));
      const { refused } = summary(runs, 303);
      assert.deepEqual(refused, []);
    });

    const upload = (client: AdminClient, slug: string, version: string) =>
      timed(() =>
        client.upload(`/admin/projects/${slug}/releases`, [
          ["csrf_token", client.csrfToken],
          ["version", version],
          ["file", new File([crypto.getRandomValues(new Uint8Array(1024))], "app.bin")],
        ])
      );

    await t.step("32 sessions × 5 uploads to one project", async () => {
      const runs = (await Promise.all(clients.map(async (client, i) => {
        const mine = [];
        for (let n = 0; n < 5; n++) mine.push(await upload(client, "shared", `1.${i}.${n}`));
        return mine;
      }))).flat();
      const { refused, p99 } = summary(runs, 303);
      console.log(`one project: ${runs.length} uploads, p99 ${p99.toFixed(0)} ms`);
      assert.deepEqual(refused, []);
    });

    await t.step("32 sessions × 5 uploads, a project each", async () => {
      const runs = (await Promise.all(clients.map(async (client, i) => {
        const mine = [];
        for (let n = 0; n < 5; n++) mine.push(await upload(client, `p-${i}`, `2.0.${n}`));
        return mine;
      }))).flat();
      const { refused, p99 } = summary(runs, 303);
      console.log(`32 projects: ${runs.length} uploads, p99 ${p99.toFixed(0)} ms`);
      assert.deepEqual(refused, []);
    });

    await t.step("key creation at 32 sessions", async () => {
      const runs = (await Promise.all(clients.map(async (client, i) => {
        await client.page("/admin/api-keys");
        const mine = [];
        for (let n = 0; n < 3; n++) {
          mine.push(
            await timed(() =>
              client.post("/admin/api-keys", {
                name: `k ${i}.${n}`,
                can_download: "on",
                scope_mode: "all_projects",
              })
            ),
          );
        }
        return mine;
      }))).flat();
      assert.deepEqual(summary(runs, 200).refused, []);
    });

    await t.step("every upload is there, once, and the newest is latest", async () => {
      const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
      const store = createStore(kv);
      try {
        const shared = (await getProjectBySlug(store, "shared"))!;
        const releases = await listReleasesByProject(store, shared.id);
        assert.equal(releases.length, SESSIONS * 5);
        assert.equal(new Set(releases.map((release) => release.id)).size, SESSIONS * 5);
        const newest = releases.reduce((a, b) => isNewerRelease(a, b) ? a : b);
        assert.equal((await getLatestRelease(store, shared.id))?.id, newest.id);
      } finally {
        kv.close();
      }
    });
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
});
