/**
 * The batching writer's failure policy (src/kv/batch_writer.ts; docs/reports.md
 * "Storage and bounds", docs/rollouts.md "Adoption"): a batch that could not
 * be written is tried again, no sooner than a batch time later, while its
 * items are younger than a minute and there is room (an item queued again
 * meanwhile is merged with the newer one); what is dropped is logged apart.
 * Shown on the writer itself, then on both of its kinds (client sightings,
 * install reports), with an injected clock.
 */
import assert from "node:assert/strict";
import { createBatchWriter, RETRY_MS } from "../src/kv/batch_writer.ts";
import { createBatchRunner } from "../src/lib/batch_runner.ts";
import { createStore } from "../src/kv/store.ts";
import {
  adoptionClientHash,
  type AdoptionMarker,
  offeredReleases,
} from "../src/reports/adoption.ts";
import { createAdoptionRecorder, type PendingSighting } from "../src/reports/adoption_recorder.ts";
import { createReportRecorder, type IncomingReport } from "../src/reports/report_recorder.ts";
import { getReportCounts, getReportReasons } from "../src/reports/reports.ts";
import { createTestApp, seedProject, seedRelease, withKv } from "./helpers.ts";
import { captureErrors, faultyKv } from "./faults.ts";

interface Thing {
  name: string;
  value: number;
  flag?: boolean;
}

/** A writer of things whose write fails while `failures` says so; what it wrote, in order. */
function thingWriter(
  failures: (batch: Thing[]) => boolean,
  clock: { ms: number },
  maxPending?: number,
) {
  const written: Thing[] = [];
  let failed = 0;
  const writer = createBatchWriter<Thing, never>({
    what: "things",
    keyOf: (thing) => thing.name,
    overflow: () => {},
    maxPending,
    batchMs: 5,
    now: () => clock.ms,
    onKvError: () => failed++,
    write({ items }) {
      const batch = items.map((queued) => queued.item);
      if (failures(batch)) return Promise.reject(new Error("write failed (test fault)"));
      written.push(...batch);
      return Promise.resolve();
    },
  });
  return { writer, written, failed: () => failed };
}

Deno.test("the batching writer's failure policy", async (t) => {
  await t.step("a batch that could not be written is written by a later one", async () => {
    const clock = { ms: 0 };
    let failures = 3;
    const { writer, written, failed } = thingWriter(() => failures-- > 0, clock);
    const { logged } = await captureErrors(async () => {
      writer.add({ name: "a", value: 1 });
      await writer.flush();
    });
    assert.deepEqual(written, [{ name: "a", value: 1 }]);
    assert.equal(failed(), 3);
    assert.match(logged, /could not record things \(tried once more\): Error: write failed/);
  });

  await t.step("an item older than a minute is dropped", async () => {
    const clock = { ms: 0 };
    // Every failed try takes 25 s: tried at 0, 25 and 50 s, dropped at 75 s (a write would
    // go through from the tenth try on).
    let tries = 0;
    const { writer, written, failed } = thingWriter(() => {
      clock.ms += 25_000;
      return tries++ < 10;
    }, clock);
    await captureErrors(async () => {
      writer.add({ name: "old", value: 1 });
      await writer.flush();
    });
    assert.deepEqual(written, []);
    assert.equal(failed(), Math.ceil(RETRY_MS / 25_000));
  });

  await t.step("dropped items are logged as dropped, not as tried once more", async () => {
    const clock = { ms: 0 };
    // Tried at 0, 25 and 50 s: put back twice, dropped at 75 s.
    const { writer } = thingWriter(() => {
      clock.ms += 25_000;
      return true;
    }, clock);
    const { logged } = await captureErrors(async () => {
      writer.add({ name: "old", value: 1 });
      await writer.flush();
    });
    assert.equal(logged.match(/could not record things \(tried once more\)/g)?.length, 2);
    assert.match(
      logged,
      /^dropped 1 things that could not be written for a minute: Error: write failed/m,
    );
  });

  await t.step("an item with no room to wait is logged as dropped", async () => {
    const clock = { ms: 0 };
    let first = true;
    const { writer, written } = thingWriter(
      () => {
        if (!first) return false;
        first = false;
        writer.add({ name: "b", value: 1 }); // takes the one place while "a" is being written
        return true;
      },
      clock,
      1,
    );
    const { logged } = await captureErrors(async () => {
      writer.add({ name: "a", value: 1 });
      await writer.flush();
    });
    assert.deepEqual(written, [{ name: "b", value: 1 }]);
    assert.doesNotMatch(logged, /tried once more/);
    assert.match(logged, /^dropped 1 things that could not be written \(no room to wait\)/m);
  });

  await t.step("a failed item queued again meanwhile is merged into the newer one", async () => {
    const clock = { ms: 0 };
    let first = true;
    const merged: Array<[Thing, Thing]> = [];
    const written: Thing[] = [];
    const writer = createBatchWriter<Thing, never>({
      what: "things",
      keyOf: (thing) => thing.name,
      overflow: () => {},
      // The newer value, and the flag only the failed item has.
      merge(waiting, thing) {
        merged.push([{ ...waiting }, { ...thing }]);
        return { ...thing, flag: waiting.flag === true || thing.flag === true };
      },
      batchMs: 5,
      now: () => clock.ms,
      write({ items }) {
        if (first) {
          first = false;
          writer.add({ name: "a", value: 2 }); // queued while the failing batch is written
          return Promise.reject(new Error("write failed (test fault)"));
        }
        written.push(...items.map((queued) => queued.item));
        return Promise.resolve();
      },
    });
    await captureErrors(async () => {
      writer.add({ name: "a", value: 1, flag: true });
      await writer.flush();
    });
    assert.deepEqual(merged, [[{ name: "a", value: 1, flag: true }, { name: "a", value: 2 }]]);
    assert.deepEqual(written, [{ name: "a", value: 2, flag: true }]);
  });

  await t.step("an item queued again meanwhile wins", async () => {
    const clock = { ms: 0 };
    let first = true;
    const { writer, written } = thingWriter(() => {
      if (!first) return false;
      first = false;
      // Queued while the failing batch is being written.
      writer.add({ name: "a", value: 2 });
      return true;
    }, clock);
    await captureErrors(async () => {
      writer.add({ name: "a", value: 1 });
      writer.add({ name: "b", value: 1 });
      await writer.flush();
    });
    assert.deepEqual(written, [{ name: "a", value: 2 }, { name: "b", value: 1 }]);
  });
});

Deno.test("client sightings: the batching writer's failure policy", async (t) => {
  const sighting = (releaseId: number) => ({
    projectId: 1,
    releaseId,
    identity: "install:late",
    address: "192.0.2.1",
    offered: true,
  });
  const markerOf = async (kv: Deno.Kv) =>
    (await kv.get<AdoptionMarker>(["adoption_client", 1, adoptionClientHash("install:late")]))
      .value;

  await t.step("a batch that failed twice is written by a later one", async () => {
    await withKv(async (kv) => {
      let failures = 2;
      const faulty = createStore(faultyKv(kv, {
        failGet: (key) => key[0] === "adoption_client" && failures > 0,
      }));
      const recorder = createAdoptionRecorder(faulty, { batchMs: 5, onKvError: () => failures-- });
      const { logged } = await captureErrors(async () => {
        recorder.record(sighting(2));
        await recorder.flush();
      });
      assert.match(logged, /could not record client sightings \(tried once more\)/);
      assert.equal((await markerOf(kv))?.release_id, 2);
    });
  });

  await t.step("a sighting older than a minute is dropped", async () => {
    await withKv(async (kv) => {
      const clock = { ms: Date.now() };
      const start = clock.ms;
      // Failing for ten minutes: a sighting kept that long would be written then.
      const faulty = createStore(faultyKv(kv, {
        failGet: (key) => key[0] === "adoption_client" && clock.ms < start + 600_000,
      }));
      const recorder = createAdoptionRecorder(faulty, {
        batchMs: 5,
        now: () => clock.ms,
        onKvError: () => clock.ms += 25_000,
      });
      await captureErrors(async () => {
        recorder.record(sighting(2));
        await recorder.flush();
      });
      assert.equal(await markerOf(kv), null);
    });
  });

  /** The marker once sighting(2) failed while `meanwhile` was recorded. */
  const markerAfterFailedSighting = (meanwhile: PendingSighting) =>
    withKv(async (kv) => {
      let failing = true;
      const faulty = createStore(faultyKv(kv, {
        failGet: (key) => {
          if (!failing || key[0] !== "adoption_client") return false;
          failing = false;
          recorder.record(meanwhile);
          return true;
        },
      }));
      const recorder = createAdoptionRecorder(faulty, { batchMs: 5 });
      await captureErrors(async () => {
        recorder.record(sighting(2));
        await recorder.flush();
      });
      return await markerOf(kv);
    });

  await t.step("a download of the release a failed sighting offered keeps it offered", async () => {
    const marker = await markerAfterFailedSighting({ ...sighting(2), offered: false });
    assert.equal(marker?.release_id, 2);
    assert.deepEqual(marker === null ? [] : offeredReleases(marker), [2]);
  });

  await t.step("a sighting of the client queued meanwhile wins", async () => {
    // A download of release 3 meanwhile.
    const marker = await markerAfterFailedSighting({ ...sighting(3), offered: false });
    assert.equal(marker?.release_id, 3);
    assert.deepEqual(marker?.offered ?? [], []);
  });
});

Deno.test("after a failed batch the next starts a batch time later, under flush and settle too", async (t) => {
  const batchMs = 200;
  for (const wait of ["flush", "settle"] as const) {
    await t.step(wait, async () => {
      const starts: number[] = [];
      const runner = createBatchRunner(() => {
        starts.push(performance.now());
        return Promise.resolve(starts.length === 1 ? "failed" : undefined);
      }, { batchMs, pending: () => starts.length < 2 });
      runner.request();
      // settle: the first batch, then the one that waits.
      while (starts.length < 2) await runner[wait]();
      assert.equal(starts.length, 2);
      const gap = starts[1] - starts[0];
      assert.ok(gap >= batchMs - 10, `the next batch started ${gap} ms after the failed one`);
    });
  }
});

Deno.test("a wall clock stepped back does not hold the batch after a failed one", async () => {
  const batchMs = 50;
  const stepMs = 5_000;
  const realNow = Date.now;
  try {
    const starts: number[] = [];
    const runner = createBatchRunner(() => {
      starts.push(performance.now());
      return Promise.resolve(starts.length === 1 ? "failed" : undefined);
    }, {
      batchMs,
      pending: () => {
        // The failed batch has ended: the wall clock steps back before the next is asked for.
        if (starts.length === 1) Date.now = () => realNow() - stepMs;
        return starts.length < 2;
      },
    });
    runner.request();
    await runner.flush();
    assert.equal(starts.length, 2);
    const gap = starts[1] - starts[0];
    assert.ok(gap >= batchMs - 10, `the next batch started ${gap} ms after the failed one`);
    assert.ok(gap < stepMs / 2, `the next batch started ${gap} ms after the failed one`);
  } finally {
    Date.now = realNow;
  }
});

Deno.test("a KV that fails at once: flush tries a batch time apart and leaves the event loop free", async () => {
  const kv = await Deno.openKv(":memory:");
  kv.close();
  // The writer's clock runs 30 times faster: its minute passes in 2 s.
  const speed = 30;
  const start = performance.now();
  const base = Date.now();
  const batchMs = 20;
  let tries = 0;
  const recorder = createAdoptionRecorder(createStore(kv), {
    batchMs,
    now: () => base + (performance.now() - start) * speed,
    onKvError: () => tries++,
  });
  const { logged, value } = await captureErrors(async () => {
    recorder.record({
      projectId: 1,
      releaseId: 2,
      identity: "install:dead-kv",
      address: "192.0.2.1",
      offered: true,
    });
    let flushedAt = -1;
    const flushed = recorder.flush().then(() => flushedAt = performance.now() - start);
    const timerAt = await new Promise<number>((resolve) =>
      setTimeout(() => resolve(performance.now() - start), 500)
    );
    await flushed;
    return { timerAt, flushedAt };
  });
  const minuteMs = RETRY_MS / speed;
  assert.ok(value.timerAt < 500 + 400, `a 500 ms timer fired after ${value.timerAt} ms`);
  assert.ok(value.flushedAt > value.timerAt, "flush settles after the timer");
  assert.ok(value.flushedAt < minuteMs + 2_000, `flush settled after ${value.flushedAt} ms`);
  assert.ok(tries >= 2, `${tries} tries`);
  // Paced a batch time apart: about minuteMs / batchMs tries (a spin made hundreds of thousands).
  assert.ok(tries <= minuteMs / batchMs * 1.5, `${tries} tries in ${value.flushedAt} ms`);
  assert.match(
    logged,
    /^dropped 1 client sightings that could not be written for a minute/m,
  );
});

Deno.test("install reports: the batching writer's failure policy", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  // Three installs the service offered the release (their reports are trusted).
  for (const installId of ["one", "two", "three"]) {
    app.adoption.record({
      projectId: project.id,
      releaseId: release.id,
      identity: `install:${installId}`,
      address: "192.0.2.1",
      offered: true,
    });
  }
  await app.adoption.flush();
  const crash = (installId: string, reason: string): IncomingReport => ({
    projectId: project.id,
    installId,
    address: "192.0.2.1",
    version: "1.0.0",
    kind: "crash",
    reason,
  });
  const failingReports = (faults: { failures: () => boolean; onKvError?: () => void }) => {
    const clock = { ms: Date.now() };
    const store = createStore(faultyKv(app.kv, {
      failGet: (key) => key[0] === "report_new_ids" && faults.failures(),
    }));
    const recorder = createReportRecorder(store, {
      batchMs: 5,
      now: () => clock.ms,
      onKvError: faults.onKvError,
    });
    return { recorder, clock };
  };

  await t.step("a batch that could not be written is written by a later one", async () => {
    let failures = 2;
    const { recorder } = failingReports({ failures: () => failures-- > 0 });
    const { logged } = await captureErrors(async () => {
      recorder.record(crash("one", "first"));
      await recorder.flush();
    });
    assert.match(logged, /could not record install reports \(tried once more\)/);
    assert.equal((await getReportCounts(app.store, release.id)).crash, 1);
  });

  await t.step("a batch of reports all counted before writes without a failure", async () => {
    const { recorder, clock } = failingReports({
      failures: () => false,
      onKvError: () => clock.ms += 25_000,
    });
    const { logged } = await captureErrors(async () => {
      recorder.record(crash("one", "again"));
      await recorder.flush();
    });
    assert.equal(logged, "");
    assert.equal((await getReportCounts(app.store, release.id)).crash, 1);
  });

  await t.step("a report older than a minute is dropped", async () => {
    const start = Date.now();
    // Failing for ten minutes: a report kept that long would be written then.
    const { recorder, clock } = failingReports({
      failures: () => clock.ms < start + 600_000,
      onKvError: () => clock.ms += 25_000,
    });
    await captureErrors(async () => {
      recorder.record(crash("two", "dropped"));
      await recorder.flush();
    });
    assert.equal((await getReportCounts(app.store, release.id)).crash, 1);
  });

  await t.step("the same report queued again meanwhile wins", async () => {
    let failing = true;
    const { recorder } = failingReports({
      failures: () => {
        if (!failing) return false;
        failing = false;
        recorder.record(crash("three", "second"));
        return true;
      },
    });
    await captureErrors(async () => {
      recorder.record(crash("three", "first"));
      await recorder.flush();
    });
    assert.equal((await getReportCounts(app.store, release.id)).crash, 2);
    const reasons = (await getReportReasons(app.store, release.id)).get("crash")!;
    assert.deepEqual(reasons.map((r) => r.reason), ["second", "first"]);
  });
});
