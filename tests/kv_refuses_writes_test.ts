/**
 * Issue 19 item 7: a KV that refuses writes (a read-only file, a full disk)
 * gets a clear answer: /healthz/details says so (/healthz keeps to the
 * contract's fields, tied to a read), admin writes answer 503 or 507 with a message
 * and change nothing, the client API keeps answering; and the start-up hint
 * for a KV file that cannot be written names the file and its directory.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { faultyKv, type KvFaults } from "./faults.ts";
import { seedKey, seedProject } from "./helpers.ts";
import { makeDataTempDir, runTask } from "./server_process.ts";

const METRICS_TOKEN = "metrics-token-0123456789";

for (
  const [reason, message, status] of [
    ["read-only", "attempt to write a readonly database", 503],
    ["full disk", "database or disk is full", 507],
  ] as const
) {
  Deno.test(`issue 19.7: a ${reason} KV: the health details say so, admin writes answer ${status}`, async (t) => {
    const faults: KvFaults = {};
    await using app = await createAdminTestApp({ metricsToken: METRICS_TOKEN }, {
      wrapKv: (kv) => faultyKv(kv, faults),
    });
    await seedProject(app, { slug: "desktop" });
    const { secret } = await seedKey(app);
    const client = await signedInClient(app);
    await client.page("/admin/projects");
    faults.refuseWrites = message;

    await t.step(
      "health details: the database answers reads (200, ok), writes are refused",
      async () => {
        const res = await app.request("/healthz/details", METRICS_TOKEN);
        assert.equal(res.status, 200);
        const body = await res.json();
        assert.equal(body.status, "ok");
        assert.equal(body.database, "ok");
        assert.equal(body.database_writes, "refused");
        const contract = await (await app.request("/healthz")).json();
        assert.equal(contract.status, "ok");
        assert.equal(
          contract.database_writes,
          undefined,
          "/healthz keeps to the contract's fields",
        );
      },
    );

    await t.step(`an admin write answers ${status} with a clear message`, async () => {
      const res = await client.post("/admin/projects", { name: "New", slug: "new" });
      assert.equal(res.status, status);
      const html = await res.text();
      assert.match(html, status === 507 ? /disk is full/ : /does not accept changes/);
      assert.match(html, /nothing was\s+changed/);
    });

    await t.step("nothing changed, and the client API still answers", async () => {
      faults.refuseWrites = undefined;
      const list = await app.request("/api/v1/projects", secret);
      assert.equal(list.status, 200);
      assert.deepEqual((await list.json()).projects.map((p: { slug: string }) => p.slug), [
        "desktop",
      ]);
      const health = await (await app.request("/healthz/details", METRICS_TOKEN)).json();
      assert.equal(health.database_writes, "refused", "the probe's answer stands a few seconds");
    });
  });
}

Deno.test("issue 19.7: the start-up hint for a KV file that cannot be opened for writing", async () => {
  const dataDir = await makeDataTempDir("kv-readonly");
  // A directory where the KV file should be: SQLite cannot open it as a database file.
  const kvPath = join(dataDir, "kv", "kv.sqlite3");
  await Deno.mkdir(kvPath, { recursive: true });
  try {
    const ran = await runTask(["start"], { APP_DATA_DIR: dataDir, APP_KV_PATH: kvPath });
    assert.equal(ran.code, 1);
    const line = ran.stderr.trim().split("\n").at(-1) ?? "";
    assert.match(
      line,
      /^cannot start: APP_(DATA_DIR|KV_PATH): .*kv\.sqlite3 is a directory; give the path of a file$/,
    );
    assert.doesNotMatch(line, /install -d/, "no directory is suggested at the file's path");
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
