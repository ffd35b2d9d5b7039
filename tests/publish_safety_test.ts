/**
 * Release safety in the publishing API (src/publishing/api/safety.ts): gates
 * put on a rollout, read and taken off; roll back; the release policy; bad
 * input as JSON errors; an upload-only token refused.
 */
import assert from "node:assert/strict";
import { setMinimumVersion, setReleaseCritical } from "../src/releases/release_policy.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import { publishRelease } from "../src/storage/mod.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken } from "./publish_helpers.ts";

Deno.test("publishing API: gates, roll back and release policy", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  await makeReleaseLatest(app.store, v1.id);
  await startRollout(app.store, v2.id, { percentage: 5 });
  const { secret: token } = await seedPublishToken(app.store);
  const { secret: uploadOnly } = await seedPublishToken(app.store, { permissions: ["upload"] });
  const call = (method: string, path: string, body?: unknown, secret = token) =>
    app.request(`${PUBLISH_PREFIX}${path}`, secret, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const gates = {
    stages: [5, 50, 100],
    min_installs: 200,
    min_hours: 6,
    advance_below: 2,
    halt_at: 5,
  };

  await t.step("gates: put, read, refused when bad or without release_state", async () => {
    const put = await call("PUT", "/projects/app/rollout/gates", gates);
    assert.equal(put.status, 200);
    const body = await put.json();
    assert.deepEqual(body.gates.stages, [5, 50, 100]);
    assert.equal(body.gates.stage_history[0].percentage, 5);
    const read = await (await call("GET", "/projects/app/rollout/gates")).json();
    assert.equal(read.gates.halt_at, 5);
    const bad = await call("PUT", "/projects/app/rollout/gates", { ...gates, halt_at: 1 });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /halt_at must be at least advance_below/);
    const refused = await call("PUT", "/projects/app/rollout/gates", gates, uploadOnly);
    assert.equal(refused.status, 403);
    await refused.body?.cancel();
    const off = await call("DELETE", "/projects/app/rollout/gates");
    assert.deepEqual(await off.json(), { gates: null });
  });

  await t.step("policy and roll back; the latest answer's headers follow", async () => {
    const { secret: key } = await seedKey(app);
    const put = await call("PUT", "/projects/app/policy", {
      critical_release_ids: [v1.id],
      minimum_version: "0.9.0",
    });
    assert.equal(put.status, 200);
    assert.deepEqual((await put.json()).policy.critical_release_ids, [v1.id]);
    const bad = await call("PUT", "/projects/app/policy", { critical_release_ids: ["x"] });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
    const back = await call("POST", "/projects/app/rollback");
    assert.equal(back.status, 200);
    assert.equal((await back.json()).rollback.to_id, v1.id);
    const latest = await app.request("/api/v1/projects/app/releases/latest", key);
    assert.equal(latest.headers.get("x-update-critical"), "true");
    assert.equal(latest.headers.get("x-minimum-version"), "0.9.0");
    assert.equal(latest.headers.get("x-rolled-back"), "1.1.0");
    await latest.body?.cancel();
  });
});

Deno.test("Sparkle appcast: critical release and minimum version", async () => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "mac" });
  const release = await publishRelease(app.store, app.artifacts, {
    release: {
      project_id: project.id,
      version: "2.0.0",
      filename: "App.zip",
      sparkle_signature: btoa(String.fromCharCode(...new Uint8Array(64).fill(7))),
    },
    source: ReadableStream.from([new TextEncoder().encode("bundle")]),
    maxBytes: app.config.maxUploadBytes,
  });
  const { secret } = await seedKey(app);
  const appcast = async () =>
    await (await app.request("/feeds/sparkle/mac/appcast.xml", secret)).text();
  assert.doesNotMatch(await appcast(), /criticalUpdate/);
  await setMinimumVersion(app.store, { projectId: project.id, version: "1.5.0" });
  assert.match(await appcast(), /<sparkle:criticalUpdate sparkle:version="1.5.0"\/>/);
  await setReleaseCritical(app.store, { releaseId: release.id, critical: true });
  const critical = await appcast();
  assert.match(critical, /<sparkle:criticalUpdate\/>/);
  assert.doesNotMatch(critical, /minimumAutoupdateVersion/);
});
