/**
 * A decision of the health gates is one commit (docs/rollouts.md "Health
 * gates"): a person's Halt that lands between the gates' read and their
 * commit wins over an advance and over a completion, and a completion by the
 * gates makes the release latest, ends the rollout, sends `rollout.changed`
 * with `by: "gates"` and the reason, and writes its audit entry, all in one
 * commit.
 */
import assert from "node:assert/strict";
import { checkForUpdate, sendReport } from "../client/update_client.ts";
import { evaluateGates } from "../src/rollouts/gates.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { auditKey, latestReleaseKey, rolloutGatesKey } from "../src/kv/keys.ts";
import { getLatestRelease, makeReleaseLatest } from "../src/releases/releases.ts";
import {
  getRolloutGates,
  type RolloutGates,
  setRolloutGates,
} from "../src/rollouts/gate_records.ts";
import { changeRollout, getRollout, startRollout } from "../src/releases/rollouts.ts";
import { createStore } from "../src/kv/store.ts";
import { faultyKv } from "./faults.ts";
import {
  createTestApp,
  dumpKv,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
} from "./helpers.ts";

const HOUR = 3_600_000;

/** A project whose 1.1.0 rolls out at `percentage` from 1.0.0 under `gates`, and 5 installs that took it. */
async function gatedRollout(app: TestApp, { percentage, gates }: {
  percentage: number;
  gates: RolloutGates;
}) {
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret } = await seedKey(app);
  await startRollout(app.store, v2.id, { percentage });
  await setRolloutGates(app.store, { projectId: project.id, gates, nowMs: Date.now() - HOUR });
  let taken = 0;
  for (let i = 0; taken < 5 && i < 1000; i++) {
    const options = {
      baseUrl: "http://updates.test",
      apiKey: secret,
      installId: `install-${i}`,
      fetch: ((input: URL | Request | string, init?: RequestInit) =>
        Promise.resolve(app.app.request(String(input), init))) as typeof fetch,
      sleep: () =>
        Promise.resolve(),
    };
    const update = await checkForUpdate({ ...options, project: "app", currentVersion: "1.0.0" });
    if (!update.available) continue;
    await sendReport(options, {
      project: "app",
      event: "installed",
      version: "1.1.0",
      previousVersion: "1.0.0",
    });
    taken++;
  }
  await app.reports.flush();
  return { project, v1, v2 };
}

interface EventBody {
  type: string;
  data: Record<string, unknown>;
}

async function rolloutEvents(app: TestApp): Promise<EventBody[]> {
  return (await dumpKv(app.kv))
    .filter(([key]) => key[0] === "webhook_events")
    .map(([, value]) => value as EventBody)
    .filter((event) => event.type === "rollout.changed");
}

/** A store of the gates whose next commit first lets `halt` land (once). */
function storeHaltingBeforeCommit(app: TestApp, halt: () => Promise<unknown>) {
  let armed = true;
  return createStore(
    faultyKv(app.kv, {
      beforeCommit: async () => {
        if (!armed) return;
        armed = false;
        await halt();
      },
    }),
    { cacheRefreshMs: 0 },
  );
}

const LAST_STAGE: RolloutGates = {
  stages: [100],
  min_installs: 5,
  min_hours: 0,
  advance_below: 50,
  halt_at: 90,
};

Deno.test("a gate decision is one commit", async (t) => {
  await t.step(
    "a Halt between the gates' read and their completion is not overwritten",
    async () => {
      await using app = await createTestApp();
      const { project, v1 } = await gatedRollout(app, { percentage: 100, gates: LAST_STAGE });
      const gatesStore = storeHaltingBeforeCommit(
        app,
        () => changeRollout(app.store, project.id, { halted: true }),
      );
      assert.deepEqual(await evaluateGates(gatesStore, { nowMs: Date.now() }), []);
      const rollout = await getRollout(app.store, project.id);
      assert.equal(rollout?.halted, true, "the rollout is still there, halted");
      assert.equal(
        (await getLatestRelease(app.store, project.id))?.id,
        v1.id,
        "1.0.0 stays latest",
      );
      assert.equal((await getRolloutGates(app.store, project.id))?.completed_at, null);
      const actions = (await rolloutEvents(app)).map((event) => event.data.action);
      assert.deepEqual(actions.sort(), ["halted", "started"]);
      // The next evaluation leaves the halted rollout alone.
      assert.deepEqual(await evaluateGates(app.store, { nowMs: Date.now() + 1 }), []);
      assert.equal((await getRollout(app.store, project.id))?.halted, true);
    },
  );

  await t.step("a Halt between the gates' read and their advance is not overwritten", async () => {
    await using app = await createTestApp();
    const { project } = await gatedRollout(app, {
      percentage: 50,
      gates: { ...LAST_STAGE, stages: [50, 100] },
    });
    const gatesStore = storeHaltingBeforeCommit(
      app,
      () => changeRollout(app.store, project.id, { halted: true }),
    );
    assert.deepEqual(await evaluateGates(gatesStore, { nowMs: Date.now() }), []);
    const rollout = await getRollout(app.store, project.id);
    assert.equal(rollout?.halted, true);
    assert.equal(rollout?.percentage, 50);
  });

  await t.step("a completion by the gates: latest, event and audit in one commit", async () => {
    await using app = await createTestApp();
    const { project, v2 } = await gatedRollout(app, { percentage: 100, gates: LAST_STAGE });
    const changes = await evaluateGates(app.store, { nowMs: Date.now() });
    assert.equal(changes.length, 1);
    assert.equal(changes[0].action, "completed");
    const reason = changes[0].reason;
    assert.match(reason, /^5 successful installs, 0 of 5 reports failed \(0%\) in the 100% stage/);
    assert.match(reason, new RegExp(`release ${v2.id} is latest$`));
    assert.equal(await getRollout(app.store, project.id), null);
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);

    const completed = (await rolloutEvents(app)).find((event) => event.data.action === "completed");
    assert.equal(completed?.data.by, "gates");
    assert.equal(completed?.data.reason, reason);
    assert.equal((completed?.data.rollout as { release_id: number }).release_id, v2.id);

    const [entry] = (await listAuditEntries(app.store, { limit: 1 })).entries;
    assert.equal(entry.actor, "rollout gates");
    assert.equal(entry.action, "rollout.gate_completed");
    assert.equal(entry.details, `project app; ${reason}`);
    // Entries of one commit share its versionstamp.
    const stamp = (await app.kv.get(rolloutGatesKey(project.id))).versionstamp;
    const auditStamp = (await app.kv.get(auditKey(Date.parse(entry.at), entry.id))).versionstamp;
    const latestStamp = (await app.kv.get(latestReleaseKey(project.id))).versionstamp;
    assert.equal(auditStamp, stamp, "the audit entry is in the gates' commit");
    assert.equal(latestStamp, stamp, "the latest pointer is in the gates' commit");
  });
});
