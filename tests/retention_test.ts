/**
 * Issue 18 item 3, retention, in process: the rule, the project page's dry
 * run and saving, the background runs (through the ordinary delete path,
 * leased per project, shared by instances, audited), storage used per
 * project (kept in the release commits, built once for older data), and the
 * default policy of new projects. The same runs against s3 (radosgw) when
 * Ceph is installed.
 */
import assert from "node:assert/strict";
import {
  retentionCandidates,
  type RetentionPlan,
  runRetention,
} from "../src/lifecycle/retention.ts";
import { buildAggregates, getProjectBytes } from "../src/projects/aggregates.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { aggregatesMarkerKey, projectBytesKey, retentionRunKey } from "../src/kv/keys.ts";
import { claimLease, getLease } from "../src/kv/leases.ts";
import {
  listReleasesByProject,
  makeReleaseLatest,
  setReleaseState,
} from "../src/releases/releases.ts";
import { getRetentionPolicy, setRetentionPolicy } from "../src/lifecycle/retention_records.ts";
import type { Release } from "../src/releases/types.ts";
import { createS3Store } from "../src/storage/s3_store.ts";
import { ConfigError, loadConfig } from "../src/lib/config.ts";
import { seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { createAdminTestApp, listArtifactFiles, signedInClient } from "./admin_helpers.ts";
import { objectsUnderPrefix, rgwTest } from "./rgw.ts";

const DAY = 86_400_000;

function daysAgo(days: number): string {
  return new Date(Date.now() - days * DAY).toISOString();
}

function release(id: number, state: Release["state"], createdAt: string): Release {
  return {
    id,
    project_id: 1,
    version: `1.${id}`,
    build: "",
    filename: `a-${id}.bin`,
    checksum_sha256: "",
    size_bytes: id * 10,
    content_type: "application/octet-stream",
    release_notes: "",
    created_at: createdAt,
    state,
    storage_key: `k${id}`,
  };
}

function ids(plan: RetentionPlan): number[] {
  return plan.candidates.map((c) => c.release.id).sort((a, b) => a - b);
}

Deno.test("the retention rule", async (t) => {
  const now = new Date();
  const releases = [
    release(1, "active", daysAgo(50)),
    release(2, "active", daysAgo(40)),
    release(3, "active", daysAgo(30)),
    release(4, "active", daysAgo(20)),
    release(5, "draft", daysAgo(60)),
    release(6, "archived", daysAgo(100)),
    release(7, "archived", daysAgo(5)),
  ];
  await t.step("keeps the newest N active; never a draft", () => {
    const plan = retentionCandidates(releases, {
      policy: { keep_active: 2, archived_max_days: null },
      latestId: 4,
      now,
    });
    assert.deepEqual(ids(plan), [1, 2]);
    assert.equal(plan.bytes, 30);
  });
  await t.step("a chosen latest older than the newest N stays besides them", () => {
    const plan = retentionCandidates(releases, {
      policy: { keep_active: 1, archived_max_days: null },
      latestId: 1,
      now,
    });
    assert.deepEqual(ids(plan), [2, 3]);
  });
  await t.step("archived releases older than D days; both rules together", () => {
    const archived = retentionCandidates(releases, {
      policy: { keep_active: null, archived_max_days: 30 },
      latestId: 4,
      now,
    });
    assert.deepEqual(ids(archived), [6]);
    const both = retentionCandidates(releases, {
      policy: { keep_active: 3, archived_max_days: 1 },
      latestId: 4,
      now,
    });
    assert.deepEqual(ids(both), [1, 6, 7]);
  });
  await t.step("no policy deletes nothing", () => {
    const plan = retentionCandidates(releases, {
      policy: { keep_active: null, archived_max_days: null },
      latestId: 4,
      now,
    });
    assert.deepEqual(ids(plan), []);
  });
});

/** A project with 4 active releases (2 KiB each; the oldest chosen latest), a draft, 2 archived. */
async function seedRetentionProject(app: TestApp, slug: string) {
  const project = await seedProject(app, { slug });
  const bytes = (n: number) => new Uint8Array(2048).fill(n);
  const r = [] as Release[];
  for (const [i, age] of [[1, 50], [2, 40], [3, 30], [4, 20]]) {
    r.push(await seedRelease(app, project.id, `1.${i}`, bytes(i), { created_at: daysAgo(age) }));
  }
  const old = await seedRelease(app, project.id, "0.9", bytes(9), { created_at: daysAgo(100) });
  const recent = await seedRelease(app, project.id, "0.8", bytes(8), { created_at: daysAgo(2) });
  await setReleaseState(app.store, old.id, "archived");
  await setReleaseState(app.store, recent.id, "archived");
  // The oldest active release is the chosen latest: kept whatever the policy.
  await makeReleaseLatest(app.store, r[0].id);
  return { project, active: r, old, recent };
}

async function retentionRuns(
  t: Deno.TestContext,
  { app, listObjects }: { app: TestApp; listObjects: () => Promise<string[]> },
) {
  {
    const { project, active, old, recent } = await seedRetentionProject(app, "weekly");
    const client = await signedInClient(app);
    const before = await listObjects();
    assert.equal(before.length, 6);
    assert.equal((await getProjectBytes(app.store, [project.id])).get(project.id), 6 * 2048);

    await t.step("the dry run shows what would go, and saves nothing", async () => {
      const res = await client.post("/admin/projects/weekly/retention", {
        keep_active: "2",
        archived_max_days: "30",
        action: "preview",
      });
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.match(html, /data-count="2" data-bytes="4096"/);
      assert.match(html, new RegExp(`data-retention-release-id="${active[1].id}"`));
      assert.match(html, new RegExp(`data-retention-release-id="${old.id}"`));
      assert.doesNotMatch(html, new RegExp(`data-retention-release-id="${active[0].id}"`));
      assert.match(html, /This policy would delete now/);
      assert.deepEqual(await getRetentionPolicy(app.store, project.id), {
        keep_active: null,
        archived_max_days: null,
      });
    });

    await t.step("bad input is shown again with a message; nothing is saved", async () => {
      const res = await client.post("/admin/projects/weekly/retention", {
        keep_active: "-1",
        archived_max_days: "",
        action: "save",
      });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /Keep the newest active releases must be a whole number/);
      assert.equal((await getRetentionPolicy(app.store, project.id)).keep_active, null);
    });

    await t.step("saving stores the policy, audited; the page shows its plan", async () => {
      const res = await client.post("/admin/projects/weekly/retention", {
        keep_active: "2",
        archived_max_days: "30",
        action: "save",
      });
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), "/admin/projects/weekly/settings#retention");
      assert.deepEqual(await getRetentionPolicy(app.store, project.id), {
        keep_active: 2,
        archived_max_days: 30,
      });
      const entry = (await listAuditEntries(app.store, { limit: 1 })).entries[0];
      assert.equal(entry.action, "project.retention");
      assert.match(entry.details, /keep_active: \(none\) → 2/);
      const { html } = await client.page("/admin/projects/weekly/settings");
      assert.match(html, /The saved policy deletes on its next run/);
      assert.match(html, /data-project-bytes="12288"/);
    });

    await t.step("two instances run it at once: each release goes once", async () => {
      const deps = { store: app.store, artifacts: app.artifacts };
      const [a, b] = await Promise.all([
        runRetention(deps, { instance: "a", everyMs: 60_000 }),
        runRetention(deps, { instance: "b", everyMs: 60_000 }),
      ]);
      const gone = [...a, ...b].map((d) => d.release.id).sort((x, y) => x - y);
      assert.deepEqual(gone, [old.id, active[1].id].sort((x, y) => x - y));
      const left = (await listReleasesByProject(app.store, project.id)).map((r) => r.id).sort();
      assert.deepEqual(
        left,
        [active[0].id, active[2].id, active[3].id, recent.id].sort(),
        "the chosen latest, the newest two active and the recent archived one stay",
      );
      assert.equal((await listObjects()).length, 4, "their artifacts are gone");
      assert.equal((await getProjectBytes(app.store, [project.id])).get(project.id), 4 * 2048);
      const audit = (await listAuditEntries(app.store, { limit: 5 })).entries
        .filter((e) => e.actor === "retention");
      assert.equal(audit.length, 2);
      assert.match(audit[0].details, /project weekly; version .*; retention: /);
      // Released by whoever ran it, with the time it ran.
      const run = (await app.kv.get<{ last_run_at: string }>(retentionRunKey(project.id))).value;
      assert.equal(await getLease(app.store, ["retention_run", project.id]), null);
      assert.ok(run?.last_run_at);
    });

    await t.step("within its interval a policy does not run again", async () => {
      await setRetentionPolicy(app.store, project.id, { keep_active: 1, archived_max_days: 1 });
      const deps = { store: app.store, artifacts: app.artifacts };
      assert.deepEqual(await runRetention(deps, { instance: "c", everyMs: 60_000 }), []);
      // Due again (interval 0): the latest stays even with keep_active 1.
      const gone = await runRetention(deps, { instance: "c", everyMs: 0 });
      assert.deepEqual(
        gone.map((d) => d.release.id).sort(),
        [active[2].id, recent.id].sort(),
      );
      const left = (await listReleasesByProject(app.store, project.id)).map((r) => r.id).sort();
      assert.deepEqual(left, [active[0].id, active[3].id].sort());
    });

    await t.step("a run held by another instance is skipped", async () => {
      await app.kv.set(retentionRunKey(project.id), { last_run_at: null });
      const lease = { holder: "elsewhere", ttlMs: 60_000 };
      assert.ok(await claimLease(app.store, ["retention_run", project.id], lease));
      await setRetentionPolicy(app.store, project.id, { keep_active: 1, archived_max_days: null });
      const deps = { store: app.store, artifacts: app.artifacts };
      assert.deepEqual(await runRetention(deps, { instance: "d", everyMs: 0 }), []);
    });

    await t.step("the dashboard shows storage used per project", async () => {
      const { html } = await client.page("/admin");
      assert.match(html, /data-storage-project="weekly" data-bytes="4096"/);
      assert.match(html, /data-storage-total="4096"/);
    });
  }
}

Deno.test("retention with fs", async (t) => {
  await using app = await createAdminTestApp();
  await retentionRuns(t, { app, listObjects: () => listArtifactFiles(app) });
});

Deno.test("storage per project: built once for data written before it was kept", async () => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "old" });
  await seedRelease(app, project.id, "1.0", new Uint8Array(1000));
  await seedRelease(app, project.id, "1.1", new Uint8Array(500));
  // As a KV of the version before: no byte sums, the marker at version 1.
  await app.kv.delete(projectBytesKey(project.id));
  await app.kv.set(aggregatesMarkerKey(), { version: 1, building_since: null });
  assert.equal(await buildAggregates(app.store), "built");
  assert.equal((await getProjectBytes(app.store, [project.id])).get(project.id), 1500);
});

Deno.test("a new project starts with the operator's default policy", async () => {
  await using app = await createAdminTestApp({
    newProjectRetention: { keep_active: 5, archived_max_days: 90 },
  });
  const client = await signedInClient(app);
  const res = await client.post("/admin/projects", { name: "New", slug: "new" });
  assert.equal(res.status, 303);
  const { html } = await client.page("/admin/projects/new/settings");
  assert.match(html, /name="keep_active"[^>]*value="5"/);
  assert.match(html, /name="archived_max_days"[^>]*value="90"/);
});

rgwTest("retention with s3 (radosgw)", async (t, rgw) => {
  const s3 = await rgw.bucket({ prefix: "artifacts/" });
  const artifacts = await createS3Store(s3, 64 * 1024 ** 2);
  await using app = await createAdminTestApp({}, { artifacts });
  await retentionRuns(t, { app, listObjects: () => objectsUnderPrefix(s3) });
});

Deno.test("the retention settings", () => {
  const config = loadConfig({
    APP_RETENTION_KEEP_ACTIVE: "10",
    APP_RETENTION_ARCHIVED_DAYS: "",
  });
  assert.deepEqual(config.newProjectRetention, { keep_active: 10, archived_max_days: null });
  assert.equal(config.retentionIntervalMinutes, 60);
  for (
    const [name, value] of [
      ["APP_RETENTION_KEEP_ACTIVE", "0"],
      ["APP_RETENTION_ARCHIVED_DAYS", "ten"],
      ["APP_RETENTION_INTERVAL_MINUTES", "0"],
    ]
  ) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (error: unknown) => error instanceof ConfigError && error.setting === name,
    );
  }
});
