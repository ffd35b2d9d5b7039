/**
 * Issue 18 items 1, 2 and 4 in process: editing releases, keys and projects
 * (audited before/after, stale forms refused), deleting them (records,
 * artifacts, what is kept), key search by prefix and the admin download link.
 */
import assert from "node:assert/strict";
import { createMetrics } from "../src/lib/metrics.ts";
import { rolloutGauges } from "../src/rollouts/metrics.ts";
import { adoptionDay, recordSighting } from "../src/reports/adoption.ts";
import { getDeletedDownloads } from "../src/lifecycle/delete_records.ts";
import {
  adoptionClientPrefix,
  adoptionCountPrefix,
  downloadsByDayPrefix,
  releasePolicyKey,
  rolloutGateChangesPrefix,
  rolloutGatesKey,
  rolloutKey,
  rolloutsPrefix,
  topKeysKey,
} from "../src/kv/keys.ts";
import { listReleasesByProject, makeReleaseLatest } from "../src/releases/releases.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import { gateGauges } from "../src/rollouts/gate_metrics.ts";
import { setMinimumVersion } from "../src/releases/release_policy.ts";
import { getReportCounts } from "../src/reports/reports.ts";
import { applyGateChange, setRolloutGates } from "../src/rollouts/gate_records.ts";
import { countDownload } from "../src/stats/downloads.ts";
import { lastAudit, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import {
  AdminClient,
  createAdminTestApp,
  listArtifactFiles,
  signedInClient,
} from "./admin_helpers.ts";

function versionIn(html: string): string {
  const match = /name="expected_version" value="([^"]+)"/.exec(html);
  assert.ok(match, "the form carries the version it starts from");
  return match[1];
}

async function latestVersion(t: TestApp, key: string, slug: string): Promise<string | number> {
  const res = await t.request(`/api/v1/projects/${slug}/releases/latest`, key);
  if (res.status !== 200) {
    await res.body?.cancel();
    return res.status;
  }
  return (await res.json()).release.version;
}

Deno.test("edit", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app", name: "App", tags: ["stable"] });
  const r1 = await seedRelease(app, project.id, "1.0.0");
  const r2 = await seedRelease(app, project.id, "1.1.0", undefined, { release_notes: "old" });
  const { secret } = await seedKey(app);
  const client = await signedInClient(app);
  // The client API has the latest release cached before the edit.
  assert.equal(await latestVersion(app, secret, "app"), "1.1.0");

  await t.step("a release's version, build and notes, audited before and after", async () => {
    const { res, html } = await client.page(`/admin/releases/${r2.id}`);
    assert.equal(res.status, 200);
    const res2 = await client.post(`/admin/releases/${r2.id}`, {
      version: "1.1.1",
      build: "77",
      release_notes: "fixed notes",
      expected_version: versionIn(html),
    });
    assert.equal(res2.status, 303);
    assert.equal(await latestVersion(app, secret, "app"), "1.1.1");
    const entry = await lastAudit(app);
    assert.equal(entry.action, "release.update");
    assert.equal(entry.target, `release ${r2.id}`);
    assert.match(entry.details, /version: "1\.1\.0" → "1\.1\.1"/);
    assert.match(entry.details, /build: \(none\) → "77"/);
    assert.match(entry.details, /release_notes: "old" → "fixed notes"/);
  });

  await t.step("a version another active release has is saved with a warning", async () => {
    const { html } = await client.page(`/admin/releases/${r1.id}`);
    const res = await client.post(`/admin/releases/${r1.id}`, {
      version: "1.1.1",
      expected_version: versionIn(html),
    });
    assert.equal(res.status, 303);
    const page = await client.page("/admin/projects/app/releases");
    assert.match(page.html, /Another active release also has version 1\.1\.1/);
    assert.match(page.html, /data-duplicate-version/);
  });

  await t.step("invalid input is shown again with a 400 and nothing stored", async () => {
    const res = await client.post(`/admin/releases/${r1.id}`, { version: "", build: "9" });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /data-form-error/);
    assert.match(html, /value="9"/);
    const stored = (await listReleasesByProject(app.store, project.id)).find((r) => r.id === r1.id);
    assert.equal(stored?.version, "1.1.1");
  });

  await t.step("a stale release form is refused with the other admin's values", async () => {
    const { html } = await client.page(`/admin/releases/${r1.id}`);
    const stale = versionIn(html);
    const other = await signedInClient(app);
    await other.page(`/admin/releases/${r1.id}`);
    assert.equal(
      (await other.post(`/admin/releases/${r1.id}`, {
        version: "1.0.5",
        expected_version: stale,
      })).status,
      303,
    );
    const res = await client.post(`/admin/releases/${r1.id}`, {
      version: "1.0.9",
      release_notes: "mine",
      expected_version: stale,
    });
    assert.equal(res.status, 409);
    const body = await res.text();
    assert.match(body, /data-edit-conflict/);
    assert.match(body, /data-current-version="true">1\.0\.5</);
    assert.match(body, /value="1\.0\.9"/, "what was entered is still in the form");
    assert.match(body, />mine</);
    // Sent again with the version the 409 page carries, it is saved.
    const again = await client.post(`/admin/releases/${r1.id}`, {
      version: "1.0.9",
      expected_version: versionIn(body),
    });
    assert.equal(again.status, 303);
  });

  await t.step("a key's name, scope and expiry; effective on the next request", async () => {
    await seedProject(app, { slug: "other", tags: ["beta"] });
    const { apiKey, secret: scoped } = await seedKey(app, { name: "ci" });
    assert.equal(await latestVersion(app, scoped, "app"), "1.1.1");
    const { html } = await client.page(`/admin/api-keys/${apiKey.id}`);
    const res = await client.post(`/admin/api-keys/${apiKey.id}`, {
      name: "ci (beta only)",
      can_download: "on",
      scope_mode: "tag_allow_list",
      tags: "beta",
      expires_at: "2099-01-01T10:00",
      expected_version: versionIn(html),
    });
    assert.equal(res.status, 303);
    assert.equal(await latestVersion(app, scoped, "app"), 404, "out of scope");
    const entry = await lastAudit(app);
    assert.equal(entry.action, "api_key.update");
    assert.match(entry.details, /name: "ci" → "ci \(beta only\)"/);
    assert.match(entry.details, /scope_mode: "all_projects" → "tag_allow_list"/);
    assert.match(entry.details, /tags: \(none\) → beta/);
    assert.match(entry.details, /expires_at: \(none\) → "2099-01-01T10:00:00.000Z"/);
    // The edit form shows the stored expiry; saving it unchanged keeps it.
    const page = await client.page(`/admin/api-keys/${apiKey.id}`);
    assert.match(page.html, /value="2099-01-01T10:00"/);
    const stale = versionIn(page.html);
    assert.equal(
      (await client.post(`/admin/api-keys/${apiKey.id}`, {
        name: "renamed",
        can_download: "on",
        scope_mode: "tag_allow_list",
        tags: "beta",
        expires_at: "2099-01-01T10:00",
        expected_version: stale,
      })).status,
      303,
    );
    assert.match((await lastAudit(app)).details, /^name "renamed"; name: "ci \(beta only\)" →/);
    // The old version is stale now.
    const refused = await client.post(`/admin/api-keys/${apiKey.id}`, {
      name: "third",
      scope_mode: "all_projects",
      expected_version: stale,
    });
    assert.equal(refused.status, 409);
    assert.match(await refused.text(), /data-current-name="true">renamed</);
  });

  await t.step("a project's name, description and tags; a stale form loses nothing", async () => {
    const a = await signedInClient(app);
    const b = await signedInClient(app);
    const pageA = await a.page("/admin/projects/app");
    const pageB = await b.page("/admin/projects/app");
    assert.equal(
      (await a.post("/admin/projects/app", {
        name: "App",
        description: "",
        tags: "stable, beta",
        expected_version: versionIn(pageA.html),
      })).status,
      303,
    );
    const res = await b.post("/admin/projects/app", {
      name: "App",
      description: "new text",
      tags: "stable",
      expected_version: versionIn(pageB.html),
    });
    assert.equal(res.status, 409);
    const html = await res.text();
    assert.match(html, /data-current-tags="true">stable, beta</);
    assert.match(html, />new text</);
    const entry = await lastAudit(app);
    assert.equal(entry.action, "project.update");
    assert.equal(entry.details, "tags: stable → stable, beta");
    // A form without a version (outside tools) still saves.
    assert.equal(
      (await b.post("/admin/projects/app", { name: "App 2", tags: "stable, beta" })).status,
      303,
    );
  });
});

Deno.test("delete", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app", name: "App" });
  const old = await seedRelease(app, project.id, "1.0.0");
  const latest = await seedRelease(app, project.id, "2.0.0");
  const { apiKey, secret } = await seedKey(app, { name: "ci key" });
  const client = await signedInClient(app);

  await t.step("a release: record and file go, its downloads stay in the total", async () => {
    await countDownload(app.store, { releaseId: old.id, projectId: project.id, keyId: apiKey.id });
    await countDownload(app.store, { releaseId: old.id, projectId: project.id, keyId: apiKey.id });
    assert.deepEqual(await listArtifactFiles(app), [latest.storage_key, old.storage_key].sort());
    const res = await client.post(`/admin/releases/${old.id}/delete`);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/projects/app/releases#releases");
    assert.deepEqual(await listArtifactFiles(app), [latest.storage_key]);
    assert.equal((await app.request(`/api/v1/releases/${old.id}`, secret)).status, 404);
    assert.equal(await getDeletedDownloads(app.store, project.id), 2);
    const page = await client.page("/admin/projects/app/releases");
    assert.match(page.html, /Deleted releases of this project had 2 downloads/);
    const entry = await lastAudit(app);
    assert.equal(entry.action, "release.delete");
    assert.match(entry.details, /version 1\.0\.0/);
    assert.match(entry.details, /2 downloads kept/);
    assert.match(entry.details, new RegExp(`sha256 ${old.checksum_sha256}`));
  });

  await t.step("the latest release only when confirmed", async () => {
    const refused = await client.post(`/admin/releases/${latest.id}/delete`);
    assert.equal(refused.status, 409);
    assert.match(await refused.text(), /name="confirm_latest"/);
    assert.equal(await latestVersion(app, secret, "app"), "2.0.0");
    const next = await seedRelease(app, project.id, "1.5.0", undefined, {
      created_at: "2020-01-01T00:00:00Z",
    });
    const res = await client.post(`/admin/releases/${latest.id}/delete`, { confirm_latest: "on" });
    assert.equal(res.status, 303);
    // The next newest active release is served as latest at once.
    assert.equal(await latestVersion(app, secret, "app"), "1.5.0");
    assert.deepEqual(await listArtifactFiles(app), [next.storage_key]);
    assert.equal((await client.post(`/admin/releases/${latest.id}/delete`)).status, 404);
  });

  await t.step("a key: gone from the list and refused; its name stays in the audit", async () => {
    const res = await client.post(`/admin/api-keys/${apiKey.id}/delete`);
    assert.equal(res.status, 303);
    assert.equal(await latestVersion(app, secret, "app"), 401);
    const list = await client.page("/admin/api-keys");
    assert.doesNotMatch(list.html, new RegExp(`data-api-key-id="${apiKey.id}"`));
    const entry = await lastAudit(app);
    assert.equal(entry.action, "api_key.delete");
    assert.equal(entry.target, `api key ${apiKey.id}`);
    assert.match(entry.details, /name "ci key"/);
    // The dashboard's top keys are a snapshot at most a minute old: start a fresh one.
    await app.kv.delete(topKeysKey());
    const dashboard = await client.page("/admin");
    assert.match(dashboard.html, /ci key/, "the top keys still name the deleted key");
  });

  await t.step("a project: only without active releases, after typing its slug", async () => {
    const archived = await seedRelease(app, project.id, "0.9.0");
    await client.page("/admin/projects/app");
    const wrongSlug = await client.post("/admin/projects/app/delete", { confirm_slug: "ap" });
    assert.equal(wrongSlug.status, 400);
    assert.match(await wrongSlug.text(), /Type the slug &quot;app&quot; exactly/);
    const active = await client.post("/admin/projects/app/delete", { confirm_slug: "app" });
    assert.equal(active.status, 409);
    assert.match(await active.text(), /has 2 active releases/);
    for (const release of await listReleasesByProject(app.store, project.id)) {
      await client.post(`/admin/releases/${release.id}/archive`);
    }
    assert.equal(archived.state, "active");
    const res = await client.post("/admin/projects/app/delete", { confirm_slug: "app" });
    assert.equal(res.status, 303);
    assert.deepEqual(await listArtifactFiles(app), []);
    assert.equal((await client.page("/admin/projects/app")).res.status, 404);
    assert.equal(await getDeletedDownloads(app.store, project.id), 0);
    const entry = await lastAudit(app);
    assert.equal(entry.action, "project.delete");
    assert.match(entry.details, /2 archived releases deleted/);
    // The slug is free again.
    assert.equal((await client.post("/admin/projects", { name: "App", slug: "app" })).status, 303);
  });
});

Deno.test("deleting a project leaves no rollout, adoption or per-day downloads behind", async () => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "gone" });
  const other = await seedProject(app, { slug: "stays" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  const kept = await seedRelease(app, other.id, "1.0.0");
  await makeReleaseLatest(app.store, v1.id);
  await startRollout(app.store, v2.id, { percentage: 25 });
  const now = Date.now();
  const today = adoptionDay(now);
  // More clients than one commit deletes, so the delete takes several batches.
  for (let i = 0; i < 600; i++) {
    const releaseId = i % 2 === 0 ? v1.id : v2.id;
    await recordSighting(app.store, {
      projectId: project.id,
      releaseId,
      client: `c${i}`,
      day: today,
    });
  }
  await recordSighting(app.store, {
    projectId: other.id,
    releaseId: kept.id,
    client: "c0",
    day: today,
  });
  await countDownload(app.store, { releaseId: v1.id, projectId: project.id, keyId: 1 });
  const metrics = createMetrics();
  metrics.addScrapeSource(() => rolloutGauges(app.store, now));
  const prefixes = [
    adoptionClientPrefix(project.id),
    adoptionCountPrefix(project.id),
    downloadsByDayPrefix(["project", project.id]),
  ];
  const left = async () => {
    const keys: Deno.KvKey[] = [];
    for (const prefix of prefixes) {
      for await (const entry of app.kv.list({ prefix })) keys.push(entry.key);
    }
    if ((await app.kv.get(rolloutKey(project.id))).versionstamp !== null) {
      keys.push(rolloutKey(project.id));
    }
    return keys;
  };
  const rolloutSample = new RegExp(`uds_rollout_percentage\\{project="(gone|${project.id})"`);
  assert.ok((await left()).length > 600, "the project has its rollout and adoption records");
  assert.match(await metrics.render(), rolloutSample);

  const client = await signedInClient(app);
  for (const release of [v1, v2]) {
    assert.equal((await client.post(`/admin/releases/${release.id}/archive`)).status, 303);
  }
  const res = await client.post("/admin/projects/gone/delete", { confirm_slug: "gone" });
  assert.equal(res.status, 303);

  assert.deepEqual(await left(), []);
  const rollouts = [];
  for await (const entry of app.kv.list({ prefix: rolloutsPrefix() })) rollouts.push(entry.key);
  assert.deepEqual(rollouts, []);
  assert.doesNotMatch(await metrics.render(), rolloutSample);
  // Another project's records stay.
  const others = [];
  for await (const entry of app.kv.list({ prefix: adoptionClientPrefix(other.id) })) {
    others.push(entry.key);
  }
  assert.equal(others.length, 1);
});

Deno.test("deleting a project leaves no gates, gate counts or release policy behind", async () => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "gone" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  await startRollout(app.store, v2.id, { percentage: 5 });
  const gates = {
    stages: [5, 50, 100],
    min_installs: 1,
    min_hours: 0,
    advance_below: 2,
    halt_at: 5,
  };
  await setRolloutGates(app.store, { projectId: project.id, gates });
  const counts = await getReportCounts(app.store, v2.id);
  const nowMs = Date.now();
  assert.ok(
    await applyGateChange(app.store, {
      projectId: project.id,
      action: "halted",
      reason: "test",
      counts,
      nowMs,
    }),
  );
  await setMinimumVersion(app.store, { projectId: project.id, version: "1.0.0" });
  const metrics = createMetrics();
  metrics.addScrapeSource(() => gateGauges(app.store));
  const left = async () => {
    const keys: Deno.KvKey[] = [];
    for await (const entry of app.kv.list({ prefix: rolloutGateChangesPrefix(project.id) })) {
      keys.push(entry.key);
    }
    for (const key of [rolloutGatesKey(project.id), releasePolicyKey(project.id)]) {
      if ((await app.kv.get(key)).versionstamp !== null) keys.push(key);
    }
    return keys;
  };
  const gateSample = new RegExp(`uds_rollout_gate_changes\\{project="(gone|${project.id})"`);
  assert.equal((await left()).length, 3, "the project has its gates, a change and a policy");
  assert.match(await metrics.render(), gateSample);

  const client = await signedInClient(app);
  for (const release of [v1, v2]) {
    assert.equal((await client.post(`/admin/releases/${release.id}/archive`)).status, 303);
  }
  const res = await client.post("/admin/projects/gone/delete", { confirm_slug: "gone" });
  assert.equal(res.status, 303);

  assert.deepEqual(await left(), []);
  assert.doesNotMatch(await metrics.render(), gateSample);
});

Deno.test("find", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0", new TextEncoder().encode("bytes!"));
  const { apiKey } = await seedKey(app, { name: "scanner found me" });
  await seedKey(app, { name: "another" });
  const client = await signedInClient(app);

  await t.step("key search matches the shown prefix, in any case, and the name", async () => {
    for (const q of [apiKey.prefix, apiKey.prefix.toUpperCase(), "scanner"]) {
      const { html } = await client.page(`/admin/api-keys?q=${encodeURIComponent(q)}`);
      assert.match(html, new RegExp(`data-api-key-id="${apiKey.id}"`), q);
      assert.equal(html.match(/<tr data-api-key-id=/g)?.length, 1, q);
    }
  });

  await t.step("a release's file downloads from the admin UI, not counted", async () => {
    const { html } = await client.page(`/admin/releases/${release.id}`);
    assert.match(html, new RegExp(`href="/admin/releases/${release.id}/download"`));
    const res = await client.fetch(`/admin/releases/${release.id}/download`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "bytes!");
    assert.match(res.headers.get("content-disposition") ?? "", /app-1\.0\.0\.bin/);
    const anonymous = new AdminClient(app);
    const refused = await anonymous.fetch(`/admin/releases/${release.id}/download`);
    assert.equal(refused.status, 303);
  });

  await t.step("an uploaded script or page downloads as bytes, sandboxed", async () => {
    for (const [type, filename] of [["text/javascript", "x.js"], ["text/html", "x.html"]]) {
      const file = await seedRelease(
        app,
        project.id,
        "6.6.6",
        new TextEncoder().encode("alert(1)"),
        {
          filename,
          content_type: type,
        },
      );
      const res = await client.fetch(`/admin/releases/${file.id}/download`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), "alert(1)");
      assert.equal(res.headers.get("content-type"), "application/octet-stream", type);
      assert.equal(res.headers.get("content-security-policy"), "sandbox", type);
      assert.match(res.headers.get("content-disposition") ?? "", /^attachment; filename=x\./);
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      assert.equal(res.headers.get("cache-control"), "private, no-store");
    }
  });
});

Deno.test("audit log filters and target links", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  const r1 = await seedRelease(app, project.id, "1.0.0");
  const r12 = await seedRelease(app, project.id, "1.2.0");
  const client = await signedInClient(app);
  const other = await signedInClient(app);
  other.address = "198.51.100.2";
  await client.post(`/admin/releases/${r1.id}/archive`);
  await client.post(`/admin/releases/${r12.id}/archive`);
  await client.post("/admin/projects/app", { name: "App 2" });
  await other.post(`/admin/releases/${r1.id}/activate`);
  const rows = (html: string) =>
    [...html.matchAll(/data-audit-action="([^"]+)"/g)].map((m) => m[1]);

  await t.step("by kind of change", async () => {
    const { html } = await client.page("/admin/audit?action=release");
    assert.deepEqual(rows(html), ["release.activate", "release.archive", "release.archive"]);
    const exact = await client.page("/admin/audit?action=release.activate");
    assert.deepEqual(rows(exact.html), ["release.activate"]);
  });

  await t.step("by target: release 1 is not release 12", async () => {
    const { html } = await client.page(
      `/admin/audit?target=${encodeURIComponent(`release ${r1.id}`)}`,
    );
    assert.deepEqual(rows(html), ["release.activate", "release.archive"]);
    assert.match(html, new RegExp(`<a href="/admin/releases/${r1.id}" data-audit-target`));
  });

  await t.step("by admin, combined with a kind", async () => {
    const { html } = await client.page("/admin/audit?actor=ADMIN&action=project");
    assert.deepEqual(rows(html), ["project.update"]);
    assert.match(html, /<a href="\/admin\/projects\/app" data-audit-target/);
    const nobody = await client.page("/admin/audit?actor=someone");
    assert.deepEqual(rows(nobody.html), []);
    assert.match(nobody.html, /No entry matches/);
  });
});

Deno.test("list summaries count one thing in the singular", async () => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  await seedRelease(app, project.id, "1.0.0");
  await seedKey(app, { name: "only" });
  const client = await signedInClient(app);
  assert.match(
    (await client.page("/admin/projects/app/releases")).html,
    /pager-summary">1 release\.</,
  );
  assert.match((await client.page("/admin/api-keys")).html, /pager-summary">1 key\.</);
  assert.match(
    (await client.page("/admin/api-keys?q=only")).html,
    /pager-summary">1 of 1 key matches &quot;only&quot;\.</,
  );
});
