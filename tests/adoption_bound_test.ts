/**
 * Invented install ids (docs/rollouts.md "Adoption"): a key's new install ids
 * past APP_ADOPTION_NEW_IDS_PER_DAY go into a fixed-size sketch, so a flood
 * of them leaves storage bounded and real installs counted exactly, and the
 * latest-release answer never waits for adoption writes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createApp } from "../app.ts";
import { createStore } from "../src/store/store.ts";
import { adoptionDay, getAdoption } from "../src/store/adoption.ts";
import { createAdoptionRecorder } from "../src/store/adoption_recorder.ts";
import { makeReleaseLatest } from "../src/store/releases.ts";
import { startRollout } from "../src/store/rollouts.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { faultyKv } from "./faults.ts";
import { addToSketch, createSketch, estimateSketch, mergeSketch } from "../src/lib/hyperloglog.ts";
import { adoptionClientHash } from "../src/store/adoption.ts";

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

/** `count` latest-release checks by install ids `${prefix}0…`, a few at a time. */
async function checks(t: TestApp, secret: string, prefix: string, count: number) {
  const answers = new Map<number, number>();
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, async (_, j) => {
        const res = await t.request("/api/v1/projects/app/releases/latest", secret, {
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

  await t.step("real installs are counted exactly", async () => {
    await checks(app, shipped, "real-", 10);
    const figures = await getAdoption(app.store, project.id, today);
    assert.deepEqual(figures.releases.get(v1.id), { d1: 10, d7: 10, d30: 10 });
  });

  let afterFirstWave = 0;
  await t.step("past the cap, new ids of a key add nothing to storage", async () => {
    await checks(app, flooder, "invented-a-", 300);
    afterFirstWave = await allEntries(app.kv);
    assert.equal(await countEntries(app.kv, "adoption_client"), 10 + 20, "markers: real + cap");
    assert.equal(await countEntries(app.kv, "adoption_sketch"), 1, "one sketch: (v1, today)");
    await checks(app, flooder, "invented-b-", 600);
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
    assert.deepEqual([...await checks(app, shipped, "real-", 10)], [[v2.id, 10]]);
    const figures = await getAdoption(app.store, project.id, today);
    assert.deepEqual(figures.releases.get(v2.id), { d1: 10, d7: 10, d30: 10 });
    await checks(app, flooder, "invented-a-", 300);
    assert.equal(await countEntries(app.kv, "adoption_client"), 30);
  });

  await t.step("the cap is per key: another key's new installs are exact", async () => {
    const { secret: other } = await seedKey(app);
    await checks(app, other, "other-", 15);
    assert.equal(await countEntries(app.kv, "adoption_client"), 45);
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

Deno.test("the new-id cap holds for a key across instances writing at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uds-adoption-" });
  const path = join(dir, "kv.sqlite3");
  const handles = [await Deno.openKv(path), await Deno.openKv(path)];
  try {
    const recorders = handles.map((kv) =>
      createAdoptionRecorder(createStore(kv), { newIdsPerDay: 25 })
    );
    for (let i = 0; i < 200; i++) {
      for (const [n, recorder] of recorders.entries()) {
        recorder.record({ projectId: 1, releaseId: 2, keyId: 3, identity: `install:${n}-${i}` });
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
