/**
 * The staged rollout panel on the project page (docs/rollouts.md) in
 * process: start, change (widen), halt, resume, end and complete through the
 * admin UI, each audited; bad input shows the page again with a 400 and
 * changes nothing; the client API follows each step.
 */
import assert from "node:assert/strict";
import { getApiKey } from "../src/credentials/api_keys.ts";
import { apiKeyKey } from "../src/kv/keys.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { getRollout } from "../src/releases/rollouts.ts";
import { lastAudit, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { createAdminTestApp, type Fields, signedInClient } from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken } from "./publish_helpers.ts";

async function latestFor(t: TestApp, key: string, installId: string): Promise<string> {
  const res = await t.request("/api/v1/projects/app/releases/latest", key, {
    headers: { "x-install-id": installId },
  });
  assert.equal(res.status, 200);
  return (await res.json()).release.version;
}

/** How many of 200 install ids get `version`. */
async function reach(t: TestApp, key: string, version: string): Promise<number> {
  let count = 0;
  for (let i = 0; i < 200; i++) {
    if (await latestFor(t, key, `install-${i}`) === version) count++;
  }
  return count;
}

Deno.test("admin rollout panel", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app", name: "App" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret } = await seedKey(app);
  const tester = await seedKey(app, { rollout_tags: ["beta-testers"] });
  const client = await signedInClient(app);

  await t.step(
    "the page offers to start a rollout of the active release that is not latest",
    async () => {
      const { res, html } = await client.page("/admin/projects/app/rollout");
      assert.equal(res.status, 200);
      assert.match(html, /data-rollout="none"/);
      assert.match(html, new RegExp(`<option value="${v2.id}"[^>]*>2\\.0\\.0`));
      assert.doesNotMatch(html, new RegExp(`<option value="${v1.id}"`));
    },
  );

  await t.step("bad input is shown again with a 400 and nothing stored", async () => {
    const res = await client.post("/admin/projects/app/rollout", {
      release_id: String(v2.id),
      percentage: "150",
      schedule: "",
      tester_tag: "",
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /data-form-error/);
    assert.match(html, /Percentage of clients must be a number from 0 to 100/);
    assert.match(html, /value="150"/);
    assert.equal(await getRollout(app.store, project.id), null);
    const bad = await client.post("/admin/projects/app/rollout", {
      release_id: String(v2.id),
      percentage: "10",
      schedule: "tomorrow=50",
    });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /RFC 3339/);
    const latest = await client.post("/admin/projects/app/rollout", {
      release_id: String(v1.id),
      percentage: "10",
    });
    assert.equal(latest.status, 400);
    assert.match(await latest.text(), /already the latest/);
    assert.equal(await getRollout(app.store, project.id), null);
  });

  await t.step("start: 10% with testers, audited, the API follows", async () => {
    const res = await client.post("/admin/projects/app/rollout", {
      release_id: String(v2.id),
      percentage: "10",
      schedule: "",
      tester_tag: "beta-testers",
    });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/projects/app/rollout#rollout");
    const rollout = (await getRollout(app.store, project.id))!;
    assert.equal(rollout.release_id, v2.id);
    assert.equal(rollout.percentage, 10);
    assert.equal(rollout.tester_tag, "beta-testers");
    const entry = await lastAudit(app);
    assert.equal(entry.action, "rollout.start");
    assert.match(entry.details, new RegExp(`release ${v2.id} over ${v1.id}; 10%; testers`));
    const share = await reach(app, secret, "2.0.0");
    assert.ok(share > 0 && share < 60, `10% of 200 install ids, got ${share}`);
    assert.equal(await latestFor(app, tester.secret, "install-x"), "2.0.0");
    const { html } = await client.page("/admin/projects/app/rollout");
    assert.match(html, /data-rollout="running"/);
    assert.match(html, /data-rollout-percentage="true">10%/);
  });

  await t.step("change: widen to 50%, audited", async () => {
    const before = await reach(app, secret, "2.0.0");
    const res = await client.post("/admin/projects/app/rollout/change", {
      percentage: "50",
      schedule: "",
      tester_tag: "beta-testers",
    });
    assert.equal(res.status, 303);
    assert.equal((await getRollout(app.store, project.id))!.percentage, 50);
    assert.equal((await lastAudit(app)).action, "rollout.change");
    const after = await reach(app, secret, "2.0.0");
    assert.ok(after > before && after > 60 && after < 140, `50% of 200, got ${after}`);
  });

  await t.step(
    "halt: everyone, testers too, gets the previous release; resume undoes it",
    async () => {
      assert.equal((await client.post("/admin/projects/app/rollout/halt")).status, 303);
      assert.equal((await lastAudit(app)).action, "rollout.halt");
      assert.equal(await reach(app, secret, "2.0.0"), 0);
      assert.equal(await latestFor(app, tester.secret, "install-x"), "1.0.0");
      const { html } = await client.page("/admin/projects/app/rollout");
      assert.match(html, /data-rollout="halted"/);
      assert.match(html, /action="\/admin\/projects\/app\/rollout\/resume"/);
      assert.equal((await client.post("/admin/projects/app/rollout/resume")).status, 303);
      assert.equal((await lastAudit(app)).action, "rollout.resume");
      assert.ok(await reach(app, secret, "2.0.0") > 60);
    },
  );

  await t.step("end: the rollout is dropped, everyone keeps the latest", async () => {
    assert.equal((await client.post("/admin/projects/app/rollout/end")).status, 303);
    assert.equal((await lastAudit(app)).action, "rollout.end");
    assert.equal(await getRollout(app.store, project.id), null);
    assert.equal(await reach(app, secret, "2.0.0"), 0);
    const again = await client.post("/admin/projects/app/rollout/halt");
    assert.equal(again.status, 400);
    assert.match(await again.text(), /no rollout/);
  });

  await t.step("complete: the release becomes the latest for everyone", async () => {
    await client.page("/admin/projects/app/rollout");
    const started = await client.post("/admin/projects/app/rollout", {
      release_id: String(v2.id),
      percentage: "1",
    });
    assert.equal(started.status, 303);
    assert.equal((await client.post("/admin/projects/app/rollout/complete")).status, 303);
    const entry = await lastAudit(app);
    assert.equal(entry.action, "rollout.complete");
    assert.match(entry.details, new RegExp(`release ${v2.id} is latest`));
    assert.equal(await getRollout(app.store, project.id), null);
    assert.equal(await reach(app, secret, "2.0.0"), 200);
  });

  await t.step("a release of another project is refused", async () => {
    const other = await seedProject(app, { slug: "other" });
    const o1 = await seedRelease(app, other.id, "1.0.0");
    const res = await client.post("/admin/projects/app/rollout", {
      release_id: String(o1.id),
      percentage: "10",
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /a release of this project/);
  });
});

Deno.test("testers on any key: rollout tags whatever the scope mode", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app", name: "App", tags: ["stable"] });
  const other = await seedProject(app, { slug: "other", tags: ["beta-testers"] });
  await seedRelease(app, other.id, "9.0.0");
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret: plain } = await seedKey(app);
  const client = await signedInClient(app);
  await client.page("/admin/api-keys");

  /** Creates a key through the admin form; its secret and stored record. */
  const createKey = async (fields: Fields) => {
    const html = await (await client.post("/admin/api-keys", fields)).text();
    const secret = /data-api-key="([^"]+)"/.exec(html)![1];
    const id = Number(/data-api-key-id="(\d+)"/.exec(html)![1]);
    return { secret, id, html, stored: (await getApiKey(app.store, id))! };
  };
  /** The slugs a key sees on the client API. */
  const visible = async (secret: string) =>
    ((await (await app.request("/api/v1/projects", secret)).json()).projects as { slug: string }[])
      .map((p) => p.slug).sort();

  const base = { can_download: "on", expires_at: "", tags: "" };
  const all = await createKey({
    ...base,
    name: "All, tester",
    scope_mode: "all_projects",
    tags: "ignored",
    rollout_tags: "Beta-Testers, nightly",
  });
  const listed = await createKey({
    ...base,
    name: "Listed, tester",
    scope_mode: "project_allow_list",
    project_slugs: "app",
    rollout_tags: "beta-testers",
  });
  const tagged = await createKey({
    ...base,
    name: "Tag-scoped, tester",
    scope_mode: "tag_allow_list",
    tags: "stable",
    rollout_tags: "beta-testers",
  });

  await t.step("the form keeps rollout tags in every mode; the scope is as before", async () => {
    assert.match(all.html, /Rollout tags/);
    assert.deepEqual(all.stored.rollout_tags, ["beta-testers", "nightly"]);
    assert.deepEqual(all.stored.tags, [], "all projects stores no scope tags");
    assert.deepEqual(listed.stored.rollout_tags, ["beta-testers"]);
    assert.deepEqual(listed.stored.project_ids, [project.id]);
    assert.deepEqual(listed.stored.tags, []);
    assert.deepEqual(tagged.stored.tags, ["stable"]);
    assert.deepEqual(tagged.stored.rollout_tags, ["beta-testers"]);
    // Scope: rollout tags grant nothing (`other` carries the tag `beta-testers`).
    assert.deepEqual(await visible(all.secret), ["app", "other"]);
    assert.deepEqual(await visible(listed.secret), ["app"]);
    assert.deepEqual(await visible(tagged.secret), ["app"]);
  });

  await t.step("a 0% rollout started through the publishing API reaches them all", async () => {
    const { secret: token } = await seedPublishToken(app.store);
    const res = await app.request(`${PUBLISH_PREFIX}/releases/${v2.id}/rollout`, token, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ percentage: 0, tester_tag: "beta-testers" }),
    });
    assert.equal(res.status, 200);
    for (const key of [all, listed, tagged]) {
      for (let i = 0; i < 20; i++) {
        assert.equal(await latestFor(app, key.secret, `install-${i}`), "2.0.0", key.stored.name);
      }
    }
    assert.equal(await reach(app, plain, "2.0.0"), 0, "keys without the tag get 1.0.0");
  });

  await t.step("the key page shows them; an edit keeps, changes or clears them", async () => {
    const { html } = await client.page(`/admin/api-keys/${all.id}`);
    assert.match(html, /data-rollout-tags="beta-testers,nightly"/);
    assert.match(html, /name="rollout_tags"[^>]*value="beta-testers, nightly"/);
    const edit = (fields: Fields) => client.post(`/admin/api-keys/${all.id}`, fields);
    // An outside tool that sends only the contract's fields keeps the key's rollout tags.
    assert.equal((await edit({ ...base, name: "All", scope_mode: "all_projects" })).status, 303);
    assert.deepEqual((await getApiKey(app.store, all.id))!.rollout_tags, [
      "beta-testers",
      "nightly",
    ]);
    const cleared = { ...base, name: "All", scope_mode: "all_projects", rollout_tags: "" };
    assert.equal((await edit(cleared)).status, 303);
    assert.deepEqual((await getApiKey(app.store, all.id))!.rollout_tags, []);
    assert.equal(
      (await lastAudit(app)).details,
      'name "All"; rollout_tags: beta-testers, nightly → (none)',
    );
    assert.equal(await latestFor(app, all.secret, "install-0"), "1.0.0");
    await client.page(`/admin/api-keys/${all.id}`);
    const bad = await edit({ ...cleared, rollout_tags: "x".repeat(500) });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /data-form-error/);
  });

  await t.step("a key stored without rollout tags acts on its tags, as it always did", async () => {
    const { apiKey, secret } = await seedKey(app, {
      scope_mode: "tag_allow_list",
      tags: ["stable"],
    });
    const { rollout_tags: _, ...older } = apiKey;
    await app.kv.set(apiKeyKey(apiKey.id), { ...older, tags: ["stable", "beta-testers"] });
    assert.equal(await latestFor(app, secret, "install-0"), "2.0.0");
    assert.deepEqual(await visible(secret), ["app", "other"], "its scope as before");
    const { html } = await client.page(`/admin/api-keys/${apiKey.id}`);
    assert.match(html, /data-rollout-tags="stable,beta-testers"/);
  });
});
