/**
 * Freshness of the TUF repositories (docs/tuf.md "Freshness"): the
 * background refresh signs the timestamp again past half its life, one
 * instance at a time; a refresh that cannot sign shows as stuck on the admin
 * page and in the gauges, while the stored metadata is still served; and the
 * root is uploaded through the admin page, refused when the chain is broken.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { claimLease, releaseLease } from "../src/kv/leases.ts";
import { listSigningKeys, setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import { getTufStateEntry } from "../src/tuf/records.ts";
import {
  refreshAllRepositories,
  tufGauges,
  tufHealth,
  tufSigningState,
} from "../src/tuf/freshness.ts";
import { createOnlineKeys, refreshRepository } from "../src/tuf/repository.ts";
import { run as tufRoot } from "../tools/tuf_root.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import { runTask } from "./server_process.ts";
import { activeSigningKey, makeRootKey } from "./tuf_fixtures.ts";

const HOUR = 3_600_000;

Deno.test("the TUF metadata is kept fresh, and stuck signing shows", async (t) => {
  await using app = await createAdminTestApp();
  const dir = await Deno.makeTempDir({ prefix: "uds-tuf-fresh-" });
  const project = await seedProject(app, { slug: "app" });
  await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedKey(app);
  await activeSigningKey(app);
  const online = createOnlineKeys(app.config.dataDir);
  const start = Date.now();

  await t.step("without a root there is no repository: 404, nothing to refresh", async () => {
    const res = await app.request("/tuf/app/metadata/timestamp.json", secret);
    assert.equal(res.status, 404);
    await res.body?.cancel();
    assert.equal(await refreshAllRepositories(app.store, { online, holder: "a" }), null);
    assert.equal((await tufHealth(app.store)).configured, false);
    assert.equal(await tufSigningState(app.store), "off");
  });

  // A key that starts with "-", as one in 64 does: given as --root-key=KEY it is read as the value.
  let rootKey = await makeRootKey(dir, "root");
  while (!rootKey.publicKey.startsWith("-")) rootKey = await makeRootKey(dir, "root");
  const admin = await signedInClient(app);
  await t.step(
    "the root is uploaded on the Signing keys page; a broken chain is refused",
    async () => {
      const keySet = join(dir, "keys.json");
      await Deno.writeTextFile(keySet, JSON.stringify({ keys: await listSigningKeys(app.store) }));
      const file = join(dir, "1.root.json");
      await tufRoot([
        "make",
        "--version",
        "1",
        `--root-key=${rootKey.publicKey}`,
        "--key-set",
        keySet,
        "--out",
        file,
      ]);
      await admin.page("/admin/signing-keys");
      // Unsigned: refused, with the reason.
      await admin.post("/admin/tuf-root", { tuf_root: await Deno.readTextFile(file) });
      assert.match(
        (await admin.page("/admin/signing-keys")).html,
        /The TUF root was not saved: it is not signed by the threshold of its own root keys/,
      );
      await tufRoot(["sign", "--in", file, "--key", rootKey.pem]);
      // The task as operators run it, with its own permissions (docs/tuf.md).
      const verified = await runTask(["tuf-root", "verify", "--in", file]);
      assert.equal(verified.code, 0, verified.stderr);
      await admin.post("/admin/tuf-root", { tuf_root: await Deno.readTextFile(file) });
      const { html } = await admin.page("/admin/signing-keys");
      assert.match(html, /TUF root version 1 was saved\./);
      assert.match(html, /data-tuf-root="1"/);
      // The same version again is not the next one.
      await admin.post("/admin/tuf-root", { tuf_root: await Deno.readTextFile(file) });
      assert.match(
        (await admin.page("/admin/signing-keys")).html,
        /its version is 1; the next version is 2/,
      );
    },
  );

  await t.step("past half its life the timestamp is signed again, the snapshot kept", async () => {
    const first = await refreshRepository(app.store, { project, online, nowMs: start });
    assert.ok(first);
    const later = await refreshAllRepositories(app.store, {
      online,
      holder: "a",
      nowMs: start + 13 * HOUR,
    });
    assert.deepEqual(later?.failures, []);
    const state = (await getTufStateEntry(app.store, project.id)).value!;
    assert.ok(state.timestamp.version > first.timestamp.version);
    assert.ok(Date.parse(state.timestamp.expires) > Date.parse(first.timestamp.expires));
    assert.equal(state.snapshot.version, first.snapshot.version);
    assert.equal(state.targets.version, first.targets.version);
    const health = await tufHealth(app.store, start + 13 * HOUR);
    assert.equal(health.stuck, false);
    assert.equal(await tufSigningState(app.store), "ok");
  });

  await t.step("one instance at a time: another holder's lease makes the run skip", async () => {
    assert.ok(await claimLease(app.store, "tuf_refresh", { holder: "other", ttlMs: 60_000 }));
    assert.equal(await refreshAllRepositories(app.store, { online, holder: "a" }), null);
    await releaseLease(app.store, "tuf_refresh", { holder: "other" });
  });

  await t.step(
    "without a key to sign with, signing is stuck: page, gauges, still served",
    async () => {
      const [key] = await listSigningKeys(app.store);
      await setSigningKeyStatus(app.store, {
        kid: key.kid,
        status: "retired",
        keepOneActive: false,
      });
      const at = start + 13 * HOUR + 19 * HOUR;
      const status = await refreshAllRepositories(app.store, { online, holder: "a", nowMs: at });
      assert.equal(status?.failures.length, 1);
      assert.match(status!.failures[0].error, /lists no active signing key/);
      const health = await tufHealth(app.store, at);
      assert.equal(health.stuck, true);
      const gauges = await tufGauges(app.store, at);
      const stuck = gauges.find((g) => g.name === "uds_tuf_signing_stuck")!;
      assert.equal(stuck.samples[0].value, 1);
      const left = gauges.find((g) => g.name === "uds_tuf_timestamp_expires_in_seconds")!;
      assert.ok(left.samples[0].value < 6 * 3600);
      const { html } = await admin.page("/admin/signing-keys");
      assert.match(html, /data-tuf-status="stuck"/);
      assert.match(html, /Signing is stuck/);
      // The stored timestamp is served until it expires: clients decide.
      const res = await app.request("/tuf/app/metadata/timestamp.json", secret);
      assert.equal(res.status, 200);
      assert.equal((await res.json()).signed._type, "timestamp");
    },
  );

  await Deno.remove(dir, { recursive: true });
});
