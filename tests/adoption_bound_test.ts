/**
 * Invented install ids (docs/rollouts.md "Adoption"): a client address's new
 * install ids past APP_ADOPTION_NEW_IDS_PER_DAY go into a fixed-size sketch,
 * so a flood of them leaves storage bounded and real installs counted
 * exactly, a fleet on one key from many addresses is counted exactly however
 * large, and the latest-release answer never waits for adoption writes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createApp } from "../app.ts";
import { createStore } from "../src/kv/store.ts";
import { adoptionDay, getAdoption } from "../src/reports/adoption.ts";
import { createAdoptionRecorder } from "../src/reports/adoption_recorder.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { changeRollout, startRollout } from "../src/releases/rollouts.ts";
import { setCacheRefreshMs } from "../src/kv/cache.ts";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  sleep,
  type TestApp,
  withKv,
} from "./helpers.ts";
import { captureErrors, faultyKv } from "./faults.ts";
import { addToSketch, createSketch, estimateSketch, mergeSketch } from "../src/lib/hyperloglog.ts";
import { adoptionClientHash } from "../src/reports/adoption.ts";

async function countEntries(kv: Deno.Kv, first: string): Promise<number> {
  let count = 0;
  for await (const _ of kv.list({ prefix: [first] })) count++;
  return count;
}

async function allEntries(kv: Deno.Kv): Promise<number> {
  let count = 0;
  for await (const _ of kv.list({ prefix: [] })) count++;
  return count;
}

/**
 * `count` latest-release checks by install ids `${prefix}0…`, a few at a
 * time, from `address` (or, given a function, the address of each install).
 */
async function checks(
  t: TestApp,
  secret: string,
  { prefix, count, address }: {
    prefix: string;
    count: number;
    address: string | ((i: number) => string);
  },
) {
  const answers = new Map<number, number>();
  const batch = 250;
  for (let i = 0; i < count; i += batch) {
    // A fleet polling hourly sends a few dozen checks a second; in process they come thousands
    // a second, so the writer is let catch up before its 10,000 waiting clients fill.
    if (i % 5_000 === 0) await t.adoption.flush();
    await Promise.all(
      Array.from({ length: Math.min(batch, count - i) }, async (_, j) => {
        const from = typeof address === "string" ? address : address(i + j);
        const res = await t.requestFrom(from, "/api/v1/projects/app/releases/latest", secret, {
          headers: { "x-install-id": `${prefix}${i + j}` },
        });
        assert.equal(res.status, 200);
        const id = Number((await res.json()).release.id);
        answers.set(id, (answers.get(id) ?? 0) + 1);
      }),
    );
  }
  await t.adoption.flush();
  return answers;
}

Deno.test("a flood of invented install ids leaves storage bounded and real installs exact", async (t) => {
  await using app = await createTestApp({ adoptionNewIdsPerDay: 20 });
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret: shipped } = await seedKey(app);
  const { secret: flooder } = await seedKey(app);
  const today = adoptionDay(Date.now());

  const real = { prefix: "real-", count: 10, address: (i: number) => `10.0.0.${i}` };
  const flooding = "192.0.2.66";
  await t.step("real installs are counted exactly", async () => {
    await checks(app, shipped, real);
    const figures = await getAdoption(app.store, project.id, today);
    assert.deepEqual(figures.releases.get(v1.id), { d1: 10, d7: 10, d30: 10 });
  });

  let afterFirstWave = 0;
  await t.step("past the cap, new ids from an address add nothing to storage", async () => {
    await checks(app, flooder, { prefix: "invented-a-", count: 300, address: flooding });
    afterFirstWave = await allEntries(app.kv);
    assert.equal(await countEntries(app.kv, "adoption_client"), 10 + 20, "markers: real + cap");
    assert.equal(await countEntries(app.kv, "adoption_sketch"), 1, "one sketch: (v1, today)");
    await checks(app, flooder, { prefix: "invented-b-", count: 600, address: flooding });
    assert.equal(await allEntries(app.kv), afterFirstWave, "900 ids later, not one entry more");
  });

  await t.step("the ids past the cap are estimated", async () => {
    const figures = await getAdoption(app.store, project.id, today);
    const d1 = figures.releases.get(v1.id)!.d1;
    // 10 real + 900 invented, 30 of them exact, the rest within the sketch's error.
    assert.ok(Math.abs(d1 - 910) < 910 * 0.06, `${d1} is about 910`);
  });

  await t.step("real installs still move exactly, and repeats cost nothing", async () => {
    await startRollout(app.store, v2.id, { percentage: 100 });
    assert.deepEqual([...await checks(app, shipped, real)], [[v2.id, 10]]);
    const figures = await getAdoption(app.store, project.id, today);
    assert.deepEqual(figures.releases.get(v2.id), { d1: 10, d7: 10, d30: 10 });
    await checks(app, flooder, { prefix: "invented-a-", count: 300, address: flooding });
    assert.equal(await countEntries(app.kv, "adoption_client"), 30);
  });

  await t.step(
    "the cap is per address: the same keys' new installs elsewhere are exact",
    async () => {
      await checks(app, flooder, { prefix: "other-", count: 15, address: "192.0.2.67" });
      await checks(app, shipped, { prefix: "more-", count: 15, address: "192.0.2.68" });
      assert.equal(await countEntries(app.kv, "adoption_client"), 60);
    },
  );

  await t.step("an IPv6 host counts as its /64", async () => {
    await checks(app, flooder, {
      prefix: "v6-",
      count: 100,
      address: (i) => `2001:db8:5:6::${i.toString(16)}`,
    });
    assert.equal(await countEntries(app.kv, "adoption_client"), 60 + 20);
  });
});

/** The default cap and the figures, scaled down by ten to run in seconds. */
const SCALE = 10;

Deno.test(`a fleet of ${100_000 / SCALE} installs on one key is counted exactly; one address inventing ${200_000 / SCALE} ids stays bounded`, async (t) => {
  // As 100,000 installs against the default cap of 10,000 new ids per address and day: the
  // fleet is ten times the cap, ten installs share an address, the flood twenty times the cap.
  const cap = 10_000 / SCALE;
  await using app = await createTestApp({ adoptionNewIdsPerDay: cap });
  setCacheRefreshMs(app.store, 0);
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret } = await seedKey(app);
  const today = adoptionDay(Date.now());
  const installs = 100_000 / SCALE;
  const fleet = {
    prefix: "fleet-",
    count: installs,
    address: (i: number) => `10.0.${(i / 10 >> 8) & 255}.${(i / 10 >> 0) & 255}`,
  };
  /** Today's clients on 1.0.0 and 1.1.0. */
  const exact = async () => {
    const figures = await getAdoption(app.store, project.id, today);
    return [v1, v2].map((release) => [release.id, figures.releases.get(release.id)?.d1 ?? 0]);
  };

  await t.step("half on the rollout: each release's count is the truth", async () => {
    await startRollout(app.store, v2.id, { percentage: 50 });
    const answers = await checks(app, secret, fleet);
    assert.equal((answers.get(v1.id) ?? 0) + (answers.get(v2.id) ?? 0), installs);
    assert.deepEqual(await exact(), [[v1.id, answers.get(v1.id)], [v2.id, answers.get(v2.id)]]);
    assert.equal(await countEntries(app.kv, "adoption_sketch"), 0, "nothing estimated");
  });

  await t.step("halted, every client is back on 1.0.0 and none left on 1.1.0", async () => {
    await changeRollout(app.store, project.id, { halted: true });
    await checks(app, secret, fleet);
    assert.deepEqual(await exact(), [[v1.id, installs], [v2.id, 0]]);
  });

  await t.step("one address inventing ids adds the cap in markers and one sketch", async () => {
    const flood = 200_000 / SCALE;
    await checks(app, secret, { prefix: "invented-", count: flood, address: "192.0.2.99" });
    assert.equal(await countEntries(app.kv, "adoption_client"), installs + cap);
    assert.equal(await countEntries(app.kv, "adoption_sketch"), 1);
    const figures = await getAdoption(app.store, project.id, today);
    const d1 = figures.releases.get(v1.id)!.d1;
    const truth = installs + flood;
    assert.ok(Math.abs(d1 - truth) < truth * 0.05, `${d1} is about ${truth}`);
  });
});

Deno.test("the latest-release answer does not wait for adoption writes", async () => {
  await using t = await createTestApp();
  const project = await seedProject(t, { slug: "app" });
  await seedRelease(t, project.id, "1.0.0");
  const { secret } = await seedKey(t);
  // Every adoption read of this app's recorder hangs for good.
  const hanging = faultyKv(t.kv, { hangGet: (key) => String(key[0]).startsWith("adoption") });
  const hangingStore = createStore(hanging);
  const app = createApp({
    config: t.config,
    store: t.store,
    artifacts: t.artifacts,
    recordKeyUse: () => {},
    signer: t.signer,
    adoption: createAdoptionRecorder(hangingStore, { maxPending: 50 }),
  });
  for (let i = 0; i < 200; i++) {
    const res = await app.request("/api/v1/projects/app/releases/latest", {
      headers: { authorization: `Bearer ${secret}`, "x-install-id": `id-${i}` },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
});

Deno.test("the sketch estimates distinct hashes and merges as a union", () => {
  const a = createSketch();
  const b = createSketch();
  for (let i = 0; i < 20_000; i++) addToSketch(a, adoptionClientHash(`install:${i}`));
  for (let i = 10_000; i < 30_000; i++) addToSketch(b, adoptionClientHash(`install:${i}`));
  assert.equal(estimateSketch(createSketch()), 0);
  assert.ok(Math.abs(estimateSketch(a) - 20_000) < 20_000 * 0.05, `${estimateSketch(a)}`);
  mergeSketch(a, b);
  assert.ok(Math.abs(estimateSketch(a) - 30_000) < 30_000 * 0.05, `${estimateSketch(a)}`);
});

Deno.test("the new-id cap holds for an address across instances writing at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uds-adoption-" });
  const path = join(dir, "kv.sqlite3");
  const handles = [await Deno.openKv(path), await Deno.openKv(path)];
  try {
    const recorders = handles.map((kv) =>
      createAdoptionRecorder(createStore(kv), { newIdsPerDay: 25 })
    );
    for (let i = 0; i < 200; i++) {
      for (const [n, recorder] of recorders.entries()) {
        recorder.record({
          projectId: 1,
          releaseId: 2,
          identity: `install:${n}-${i}`,
          address: "192.0.2.1",
          offered: true,
        });
      }
    }
    await Promise.all(recorders.map((recorder) => recorder.flush()));
    assert.equal(await countEntries(handles[0], "adoption_client"), 25);
    const figures = await getAdoption(createStore(handles[0]), 1, adoptionDay(Date.now()));
    const d1 = figures.releases.get(2)!.d1;
    assert.ok(Math.abs(d1 - 400) < 400 * 0.06, `${d1} is about 400`);
  } finally {
    for (const kv of handles) kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a batch of sightings that could not be written is tried once more", async () => {
  await withKv(async (kv) => {
    let failing = true;
    const faulty = createStore(faultyKv(kv, {
      failGet: (key) => failing && key[0] === "adoption_client",
    }));
    const recorder = createAdoptionRecorder(faulty, { batchMs: 200 });
    const { logged } = await captureErrors(async () => {
      recorder.record({
        projectId: 1,
        releaseId: 2,
        identity: "install:late",
        address: "192.0.2.1",
        offered: true,
      });
      await sleep(50); // the first batch has failed
      failing = false;
      await recorder.flush();
    });
    assert.match(logged, /could not record client sightings \(tried once more\)/);
    const marker = await kv.get(["adoption_client", 1, adoptionClientHash("install:late")]);
    assert.deepEqual((marker.value as { offered: number[] }).offered, [2]);
  });
});
