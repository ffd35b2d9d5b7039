/**
 * What the health gates trust (docs/reports.md "What the gates trust"): a
 * report counts only from an install id the service itself offered that
 * release, and new ids per client address are capped. Invented install ids
 * with the shipped client key change nothing: 20 invented `crashed` reports
 * do not halt a healthy rollout, 1,000 invented `installed` reports do not
 * widen a failing one, ids that only downloaded the release by id or came in
 * past their address's cap do not count, while real installs still advance
 * and halt the gates (tests/release_safety_test.ts runs the full fleet).
 */
import assert from "node:assert/strict";
import { evaluateGates } from "../src/rollouts/gates.ts";
import { rolloutBucket } from "../src/releases/offer.ts";
import { setCacheRefreshMs } from "../src/kv/cache.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { getReportCounts, getReportEstimates } from "../src/reports/reports.ts";
import { setRolloutGates } from "../src/rollouts/gate_records.ts";
import { getRollout, startRollout } from "../src/releases/rollouts.ts";
import type { Config } from "../src/lib/config.ts";
import type { Release } from "../src/releases/types.ts";
import { createBatchRunner } from "../src/lib/batch_runner.ts";
import { createAdoptionRecorder } from "../src/reports/adoption_recorder.ts";
import { createReportRecorder } from "../src/reports/report_recorder.ts";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  sleep,
  type TestApp,
} from "./helpers.ts";

const HOUR = 3_600_000;
const GATES = {
  stages: [5, 25, 50, 100],
  min_installs: 20,
  min_hours: 6,
  advance_below: 2,
  halt_at: 5,
};

async function setUp(overrides: Partial<Config> = {}) {
  const app = await createTestApp(overrides);
  setCacheRefreshMs(app.store, 0);
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret } = await seedKey(app);
  await startRollout(app.store, v2.id, { percentage: GATES.stages[0] });
  const clock = Date.now();
  await setRolloutGates(app.store, { projectId: project.id, gates: GATES, nowMs: clock });
  return { app, project, v1, v2, secret, clock };
}

/** The version the latest-release answer gives `installId`, asking from `address`. */
async function check(app: TestApp, secret: string, installId: string, address = "192.0.2.1") {
  const res = await app.requestFrom(address, "/api/v1/projects/app/releases/latest", secret, {
    headers: { "x-install-id": installId },
  });
  assert.equal(res.status, 200);
  return (await res.json()).release.version as string;
}

async function report(
  app: TestApp,
  secret: string,
  { installId, event, version, address = "192.0.2.1" }: {
    installId: string;
    event: string;
    version: string;
    address?: string;
  },
) {
  const res = await app.requestFrom(address, "/reports/v1/projects/app", secret, {
    method: "POST",
    headers: { "content-type": "application/json", "x-install-id": installId },
    body: JSON.stringify({ event, version }),
  });
  assert.equal(res.status, 202);
  await res.body?.cancel();
}

/**
 * `count` real installs, each from an address of its own, check; those
 * offered 1.1.0 report `event` for it. Returns how many were offered it.
 */
async function realFleet(
  app: TestApp,
  secret: string,
  { count, event }: { count: number; event: string },
): Promise<number> {
  let offered = 0;
  for (let i = 0; i < count; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, count - i) }, async (_, j) => {
      const installId = `real-${i + j}`;
      const address = `10.1.${(i + j) >> 8}.${(i + j) & 255}`;
      if (await check(app, secret, installId, address) !== "1.1.0") return;
      offered++;
      await report(app, secret, { installId, event, version: "1.1.0", address });
    }));
  }
  await app.adoption.flush();
  await app.reports.flush();
  return offered;
}

/** `count` invented install ids (never answered) report `event` for 1.1.0 from one address. */
async function invented(app: TestApp, secret: string, count: number, event: string) {
  for (let i = 0; i < count; i += 100) {
    await Promise.all(
      Array.from(
        { length: Math.min(100, count - i) },
        (_, j) =>
          report(app, secret, { installId: `invented-${event}-${i + j}`, event, version: "1.1.0" }),
      ),
    );
  }
  await app.reports.flush();
}

/** An install id whose bucket for `release` is at or past `percentage` (outside the stage). */
function outsideIds(release: Release, percentage: number, count: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    if (rolloutBucket(release.id, `install:outside-${i}`) >= percentage * 100) {
      ids.push(`outside-${i}`);
    }
  }
  return ids;
}

Deno.test("20 invented crashed reports do not halt a healthy rollout", async () => {
  const { app, project, v2, secret, clock } = await setUp();
  await using _ = app;
  const offered = await realFleet(app, secret, { count: 1_000, event: "installed" });
  assert.ok(offered >= 30, `${offered} real installs in the 5% stage`);
  await invented(app, secret, 20, "crashed");
  const counts = await getReportCounts(app.store, v2.id);
  assert.equal(counts.installed, offered);
  assert.equal(counts.crash, 0, "invented ids are not counted");
  assert.equal((await getReportEstimates(app.store, v2.id)).crash, 20, "shown apart, estimated");
  assert.deepEqual(await evaluateGates(app.store, { nowMs: clock + 1 }), []);
  const changes = await evaluateGates(app.store, { nowMs: clock + 6 * HOUR + 1 });
  assert.deepEqual(changes.map((change) => change.action), ["advanced"]);
  assert.equal((await getRollout(app.store, project.id))?.halted, false);
});

Deno.test("1,000 invented installed reports do not widen a rollout whose installs all fail", async () => {
  const { app, project, v2, secret, clock } = await setUp();
  await using _ = app;
  // Few enough failures to stay below the halt's 20 reports: only installed reports could move it.
  const offered = await realFleet(app, secret, { count: 300, event: "install_failed" });
  assert.ok(offered > 0 && offered < 20, `${offered} failing installs`);
  await invented(app, secret, 1_000, "installed");
  const counts = await getReportCounts(app.store, v2.id);
  assert.equal(counts.installed, 0);
  assert.equal(counts.install, offered);
  assert.deepEqual(await evaluateGates(app.store, { nowMs: clock + 6 * HOUR + 1 }), []);
  assert.equal((await getRollout(app.store, project.id))?.percentage, 5);
});

Deno.test("a download by id outside the stage does not make an install id trusted; inside it does", async () => {
  const { app, project, v2, secret, clock } = await setUp();
  await using _ = app;
  await realFleet(app, secret, { count: 1_000, event: "installed" });
  for (const installId of outsideIds(v2, 5, 20)) {
    // Asked for by id, the release is answered; the id's place in the rollout does not give it.
    const res = await app.requestFrom("192.0.2.1", `/api/v1/releases/${v2.id}/download`, secret, {
      method: "HEAD",
      headers: { "x-install-id": installId },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await report(app, secret, { installId, event: "crashed", version: "1.1.0" });
  }
  // A download by an install the stage reaches is an answer with that release.
  let inside = "";
  for (let i = 0; inside === ""; i++) {
    if (rolloutBucket(v2.id, `install:inside-${i}`) < 500) inside = `inside-${i}`;
  }
  const res = await app.requestFrom("192.0.2.1", `/api/v1/releases/${v2.id}/download`, secret, {
    headers: { "x-install-id": inside },
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  await report(app, secret, { installId: inside, event: "installed", version: "1.1.0" });
  const before = (await getReportCounts(app.store, v2.id)).installed;
  await app.adoption.flush();
  await app.reports.flush();
  assert.equal((await getReportCounts(app.store, v2.id)).crash, 0);
  assert.equal((await getReportCounts(app.store, v2.id)).installed, before + 1);
  const changes = await evaluateGates(app.store, { nowMs: clock + 6 * HOUR + 1 });
  assert.deepEqual(changes.map((change) => change.action), ["advanced"]);
  assert.equal((await getRollout(app.store, project.id))?.halted, false);
});

Deno.test("ids checked in past their address's cap are not trusted; real failures still halt", async (t) => {
  const cap = 100;
  const { app, project, v2, secret, clock } = await setUp({ adoptionNewIdsPerDay: cap });
  await using _ = app;
  const offered = await realFleet(app, secret, { count: 1_000, event: "installed" });

  await t.step(
    "one address checks in 4,000 invented ids and reports every one offered 1.1.0 as installed",
    async () => {
      let answered = 0;
      for (let i = 0; i < 4_000; i += 100) {
        await Promise.all(Array.from({ length: 100 }, async (_, j) => {
          const installId = `flood-${i + j}`;
          if (await check(app, secret, installId) !== "1.1.0") return;
          answered++;
          await report(app, secret, { installId, event: "installed", version: "1.1.0" });
        }));
      }
      await app.adoption.flush();
      await app.reports.flush();
      assert.ok(answered > 100, `${answered} flood ids were answered 1.1.0`);
      const counted = (await getReportCounts(app.store, v2.id)).installed - offered;
      // At most the address's cap of new ids has a marker; of those, the 5% in the stage count.
      assert.ok(counted <= cap * 0.1, `${counted} of the flood counted`);
    },
  );

  await t.step("real failures from their own addresses halt the stage", async () => {
    let n = 0;
    for (let i = 0; n < 40; i++) {
      const installId = `failing-${i}`;
      const address = `10.2.${i >> 8}.${i & 255}`;
      if (await check(app, secret, installId, address) !== "1.1.0") continue;
      n++;
      await report(app, secret, { installId, event: "crashed", version: "1.1.0", address });
    }
    await app.adoption.flush();
    await app.reports.flush();
    const changes = await evaluateGates(app.store, { nowMs: clock + 1 });
    assert.deepEqual(changes.map((change) => change.action), ["halted"]);
    assert.equal((await getRollout(app.store, project.id))?.halted, true);
  });
});

Deno.test("a report sent right after its answer counts: a batch writes the answers first", async () => {
  const { app, v2, secret } = await setUp();
  await using _ = app;
  let installId = "";
  for (let i = 0; installId === ""; i++) {
    if (rolloutBucket(v2.id, `install:early-${i}`) < 500) installId = `early-${i}`;
  }
  assert.equal(await check(app, secret, installId), "1.1.0");
  // The report is taken before the answer's sighting is written (the adoption batch waits).
  await report(app, secret, { installId, event: "installed", version: "1.1.0" });
  await app.reports.flush();
  assert.equal((await getReportCounts(app.store, v2.id)).installed, 1);
});

Deno.test("a report that arrives before its answer's sighting is written counts once it is", async () => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  // Another instance's recorders on the same store: the report's batch runs first.
  const reports = createReportRecorder(app.store, { batchMs: 500 });
  const adoption = createAdoptionRecorder(app.store);
  const incoming = {
    projectId: project.id,
    installId: "quick",
    address: "192.0.2.1",
    version: "1.0.0",
    kind: "download" as const,
  };
  reports.record(incoming);
  await sleep(100); // the first batch has looked and found no sighting
  adoption.record({
    projectId: project.id,
    releaseId: release.id,
    identity: "install:quick",
    address: "192.0.2.1",
    offered: true,
  });
  await adoption.flush();
  await reports.flush();
  assert.equal((await getReportCounts(app.store, release.id)).download, 1);
  // A report of an install never answered waits once, then goes to the sketch.
  reports.record({ ...incoming, installId: "never" });
  await reports.flush();
  assert.equal((await getReportCounts(app.store, release.id)).download, 1);
  assert.equal((await getReportEstimates(app.store, release.id)).download, 1);
});

Deno.test("a report batch waits for the sightings waiting now, not for a recorder that never rests", async () => {
  // The adoption recorder's runner under steady work: a batch always waits when one ends.
  let batches = 0;
  let working = true;
  const runner = createBatchRunner(async () => {
    batches++;
    await sleep(5);
  }, { batchMs: 1, pending: () => working });
  runner.request();
  const settled = await Promise.race([
    runner.settle().then(() => true),
    sleep(2_000).then(() => false),
  ]);
  assert.ok(settled, "settle ended under steady work");
  assert.ok(batches <= 2, `${batches} batches`);
  const flushed = await Promise.race([
    runner.flush().then(() => true),
    sleep(200).then(() => false),
  ]);
  assert.equal(flushed, false, "flush waits for as long as work keeps coming");
  working = false;
  await runner.flush();
});
