/**
 * Release safety (docs/rollouts.md "Health gates", "A way back"): 10,000
 * install ids checking and reporting through the reference client's calls,
 * in process, the clock of the gates advanced by hand. A good release with
 * gates advances through every stage by itself; a bad one (5% failures)
 * halts within one evaluation, its exposure never beyond its stage; rolled
 * back, the installs that took it report the previous version after one
 * check each. Then the same on three instances sharing one KV, every
 * instance answering the change within 100 ms.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { checkForUpdate, sendReport } from "../client/update_client.ts";
import { evaluateGates, startGateEvaluator } from "../src/rollouts/gates.ts";
import { rolloutBucket } from "../src/releases/offer.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { setCacheRefreshMs } from "../src/kv/cache.ts";
import { rollBack } from "../src/releases/release_policy.ts";
import { getLatestRelease, makeReleaseLatest } from "../src/releases/releases.ts";
import { getReportCounts } from "../src/reports/reports.ts";
import { getRolloutGates, setRolloutGates } from "../src/rollouts/gate_records.ts";
import { getRollout, startRollout } from "../src/releases/rollouts.ts";
import type { Release } from "../src/releases/types.ts";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  sleep,
  type TestApp,
} from "./helpers.ts";

const INSTALLS = 10_000;
const HOUR = 3_600_000;
const GATES = {
  stages: [5, 25, 50, 100],
  min_installs: 200,
  min_hours: 6,
  advance_below: 2,
  halt_at: 5,
};

/** The reference client's options, its requests answered by one of `apps` in turn. */
function clientOf(apps: TestApp[], secret: string, installId: string, turn: () => number) {
  return {
    baseUrl: "http://updates.test",
    apiKey: secret,
    installId,
    fetch: ((input: URL | Request | string, init?: RequestInit) =>
      Promise.resolve(
        apps[turn() % apps.length].app.request(String(input), init),
      )) as typeof fetch,
    sleep: () => Promise.resolve(),
  };
}

interface Fleet {
  apps: TestApp[];
  secret: string;
  /** Each install's running version. */
  versions: string[];
  /** Installs that were ever offered each version. */
  offered: Map<string, Set<number>>;
  turn: () => number;
}

function fleet(apps: TestApp[], secret: string, version: string): Fleet {
  let n = 0;
  return {
    apps,
    secret,
    versions: Array.from({ length: INSTALLS }, () => version),
    offered: new Map(),
    turn: () => n++,
  };
}

/**
 * Every install not on `target` checks once; one offered an update installs
 * it and reports how it went (`fails(i)`: it failed to install).
 */
async function checkRound(
  f: Fleet,
  { project, fails = () => false, allowDowngrade = false }: {
    project: string;
    fails?: (i: number) => boolean;
    allowDowngrade?: boolean;
  },
): Promise<number> {
  let moved = 0;
  for (let i = 0; i < INSTALLS; i += 100) {
    await Promise.all(Array.from({ length: 100 }, async (_, j) => {
      const index = i + j;
      const options = clientOf(f.apps, f.secret, `install-${index}`, f.turn);
      const current = f.versions[index];
      const update = await checkForUpdate({ ...options, project, currentVersion: current });
      const offered = update.release.version;
      if (!f.offered.has(offered)) f.offered.set(offered, new Set());
      f.offered.get(offered)!.add(index);
      if (!update.available && !(allowDowngrade && update.downgrade)) return;
      if (fails(index)) {
        await sendReport(options, {
          project,
          event: "install_failed",
          version: offered,
          reason: "disk full",
        });
        return;
      }
      f.versions[index] = offered;
      moved++;
      await sendReport(options, {
        project,
        event: "installed",
        version: offered,
        previousVersion: current,
      });
    }));
  }
  // The answers first: a report counts once the sighting of its answer is written, on any
  // instance (docs/reports.md "What the gates trust").
  for (const app of f.apps) await app.adoption.flush();
  for (const app of f.apps) await app.reports.flush();
  return moved;
}

/** How many installs a percentage of a release's rollout reaches. */
function reach(release: Release, percentage: number): number {
  let count = 0;
  for (let i = 0; i < INSTALLS; i++) {
    if (rolloutBucket(release.id, `install:install-${i}`) < percentage * 100) count++;
  }
  return count;
}

async function seed(app: TestApp) {
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  const v3 = await seedRelease(app, project.id, "1.2.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret } = await seedKey(app);
  return { project, v1, v2, v3, secret };
}

Deno.test("10,000 installs: gates advance a good release, halt a bad one, a rollback brings them back", async (t) => {
  await using app = await createTestApp();
  setCacheRefreshMs(app.store, 0);
  const { project, v1, v2, v3, secret } = await seed(app);
  const f = fleet([app], secret, "1.0.0");
  let clock = Date.now();

  await t.step("a good release goes through every stage with no human action", async () => {
    await startRollout(app.store, v2.id, { percentage: GATES.stages[0] });
    await setRolloutGates(app.store, { projectId: project.id, gates: GATES, nowMs: clock });
    const seen: number[] = [];
    for (let period = 0; period < 10; period++) {
      const rollout = await getRollout(app.store, project.id);
      if (rollout === null) break;
      seen.push(rollout.percentage);
      await checkRound(f, { project: "app" });
      // Exposure: exactly the installs the stage reaches.
      assert.equal(f.offered.get("1.1.0")?.size ?? 0, reach(v2, rollout.percentage));
      // Too early: the stage lasts 6 hours at least.
      assert.deepEqual(await evaluateGates(app.store, { nowMs: clock + HOUR }), []);
      clock += 6 * HOUR + 1;
      const changes = await evaluateGates(app.store, { nowMs: clock });
      assert.equal(changes.length, 1, `one change in period ${period}`);
    }
    assert.deepEqual(seen, [5, 25, 50, 100]);
    assert.equal(await getRollout(app.store, project.id), null);
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
    assert.equal(f.versions.filter((v) => v === "1.1.0").length, INSTALLS);
    const audit = (await listAuditEntries(app.store, { limit: 20 })).entries
      .filter((entry) => entry.actor === "rollout gates").map((entry) => entry.action);
    assert.deepEqual(audit, [
      "rollout.gate_completed",
      "rollout.gate_advanced",
      "rollout.gate_advanced",
      "rollout.gate_advanced",
    ]);
    const gates = await getRolloutGates(app.store, project.id);
    assert.deepEqual(gates?.stages.map((stage) => stage.outcome), [
      "advanced",
      "advanced",
      "advanced",
      "completed",
    ]);
  });

  await t.step("a bad release (5% failures) halts within one evaluation", async () => {
    await startRollout(app.store, v3.id, { percentage: GATES.stages[0] });
    await setRolloutGates(app.store, { projectId: project.id, gates: GATES, nowMs: clock });
    // Exactly one in 20 of the installs offered 1.2.0 fails to install it.
    let tried = 0;
    await checkRound(f, { project: "app", fails: () => tried++ % 20 === 0 });
    const changes = await evaluateGates(app.store, { nowMs: clock + 1 });
    assert.equal(changes.length, 1);
    assert.equal(changes[0].action, "halted");
    assert.match(changes[0].reason, /reports failed .* in the 5% stage: at or above 5%/);
    const rollout = await getRollout(app.store, project.id);
    assert.equal(rollout?.halted, true);
    assert.equal(rollout?.percentage, 5);
    const exposed = f.offered.get("1.2.0")!.size;
    assert.equal(exposed, reach(v3, 5));
    // Halted: nobody else is offered 1.2.0.
    await checkRound(f, { project: "app" });
    assert.equal(f.offered.get("1.2.0")!.size, exposed);
    assert.ok(exposed <= 0.06 * INSTALLS, `${exposed} exposed`);
    const failed = await getReportCounts(app.store, v3.id);
    assert.ok(failed.install > 0);
  });

  await t.step("rolled back, the installs on 1.2.0 report 1.1.0 after one check each", async () => {
    const affected = f.versions.filter((v) => v === "1.2.0").length;
    assert.ok(affected > 0);
    await rollBack(app.store, project.id);
    const before = (await getReportCounts(app.store, v2.id)).returned;
    const moved = await checkRound(f, { project: "app", allowDowngrade: true });
    assert.equal(moved, affected);
    const returned = (await getReportCounts(app.store, v2.id)).returned - before;
    assert.ok(returned >= 0.95 * affected, `${returned} of ${affected} came back`);
    assert.equal(f.versions.filter((v) => v === "1.2.0").length, 0);
  });
  void v1;
});

Deno.test("three instances on one KV: the same outcome, each instance following within 100 ms", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "uds-gates-" });
  const kvPath = join(dir, "kv.sqlite3");
  await using a = await createTestApp({}, { kvPath });
  await using b = await createTestApp({}, { kvPath });
  await using c = await createTestApp({}, { kvPath });
  const apps = [a, b, c];
  const { project, v2, v3, secret } = await seed(a);
  const f = fleet(apps, secret, "1.0.0");
  let clock = Date.now();
  const evaluators = apps.map((app, i) =>
    startGateEvaluator(app.store, { holder: `instance-${i}`, now: () => clock, timer: false })
  );

  /** An install id the stage from `from` to `to` % adds. */
  const probeBetween = (from: number, to: number) => {
    for (let i = 0;; i++) {
      const bucket = rolloutBucket(v2.id, `install:probe-${i}`);
      if (bucket >= from * 100 && bucket < to * 100) return `probe-${i}`;
    }
  };
  const answer = async (app: TestApp, installId: string) => {
    const res = await app.request("/api/v1/projects/app/releases/latest", secret, {
      headers: { "x-install-id": installId },
    });
    return (await res.json()).release.version as string;
  };

  await t.step("the gates advance the good release through every stage", async () => {
    await startRollout(a.store, v2.id, { percentage: GATES.stages[0] });
    await setRolloutGates(a.store, { projectId: project.id, gates: GATES, nowMs: clock });
    const lags: number[] = [];
    for (let period = 0; period < 10; period++) {
      const rollout = await getRollout(a.store, project.id);
      if (rollout === null) break;
      await checkRound(f, { project: "app" });
      clock += 6 * HOUR + 1;
      // The fleet's sightings written first: the three instances share this process's event
      // loop, and a batch of 10,000 would hold up the answers being timed.
      for (const app of apps) await app.adoption.flush();
      // All three evaluate at once: one holds the lease and makes the change.
      const changes = (await Promise.all(evaluators.map((e) => e.tick()))).flat();
      assert.equal(changes.length, 1, `one change in period ${period}`);
      const changedAt = performance.now();
      const next = rollout.percentage === 100
        ? 100
        : GATES.stages.find((p) => p > rollout.percentage)!;
      const probe = rollout.percentage === 100
        ? "install-0"
        : probeBetween(rollout.percentage, next);
      // Every instance is asked at once, again every 2 ms, until it answers the new stage.
      await Promise.all(apps.map(async (app) => {
        while (await answer(app, probe) !== "1.1.0") {
          await sleep(2);
        }
        lags.push(performance.now() - changedAt);
      }));
    }
    assert.equal(await getRollout(b.store, project.id), null);
    assert.equal(f.versions.filter((v) => v === "1.1.0").length, INSTALLS);
    assert.ok(Math.max(...lags) <= 100, `lags ${lags.map(Math.round).join(", ")} ms`);
  });

  await t.step("a bad release halts at the first evaluation on any instance", async () => {
    await startRollout(b.store, v3.id, { percentage: GATES.stages[0] });
    await setRolloutGates(c.store, { projectId: project.id, gates: GATES, nowMs: clock });
    await sleep(150); // the read cache's bound
    let tried = 0;
    await checkRound(f, { project: "app", fails: () => tried++ % 20 === 0 });
    for (const app of apps) await app.adoption.flush();
    const changes = (await Promise.all(evaluators.map((e) => e.tick()))).flat();
    assert.deepEqual(changes.map((change) => change.action), ["halted"]);
    const changedAt = performance.now();
    const exposed = f.offered.get("1.2.0")!.size;
    assert.equal(exposed, reach(v3, 5));
    // Every instance answers the halt (a client of the stage gets 1.1.0 again) within 100 ms.
    const member = [...f.offered.get("1.2.0")!][0];
    const lags = await Promise.all(apps.map(async (app) => {
      while (await answer(app, `install-${member}`) !== "1.1.0") {
        await sleep(2);
      }
      return performance.now() - changedAt;
    }));
    assert.ok(Math.max(...lags) <= 100, `lags ${lags.map(Math.round).join(", ")} ms`);
    await checkRound(f, { project: "app" });
    assert.equal(f.offered.get("1.2.0")!.size, exposed);
  });

  await t.step("rolled back, the installs on 1.2.0 come back after one check each", async () => {
    const affected = f.versions.filter((v) => v === "1.2.0").length;
    const before = (await getReportCounts(a.store, v2.id)).returned;
    await rollBack(a.store, project.id);
    // The other instances follow within the read cache's bound.
    await sleep(150);
    const moved = await checkRound(f, { project: "app", allowDowngrade: true });
    assert.equal(moved, affected);
    const returned = (await getReportCounts(a.store, v2.id)).returned - before;
    assert.ok(returned >= 0.95 * affected, `${returned} of ${affected} came back`);
  });
  for (const evaluator of evaluators) evaluator.stop();
  await Deno.remove(dir, { recursive: true });
});
