/**
 * Adoption counts (src/store/adoption.ts): a scripted run of sightings over
 * 60 days, with the same sighting sent by two instances at once, gives
 * exactly the truth of that run (distinct clients per release in the last
 * 1/7/30 days, the total, stale clients).
 */
import assert from "node:assert/strict";
import {
  adoptionClientHash,
  getAdoption,
  recordSighting,
  type WindowCounts,
} from "../src/store/mod.ts";
import { withKv } from "./helpers.ts";

/** A small deterministic PRNG (mulberry32). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("adoption counts match a scripted run exactly", async (t) => {
  await withKv(async (kv) => {
    const next = random(21);
    const projectId = 7;
    const releases = [101, 102, 103];
    const clients = Array.from({ length: 150 }, (_, i) => `install:client-${i}`);
    const firstDay = 20_000;
    const days = 60;
    /** The truth: each client's latest sighting. */
    const last = new Map<string, { release: number; day: number }>();

    for (let d = 0; d < days; d++) {
      const day = firstDay + d;
      // Newer releases appear over time; clients move to them at random.
      const offered = releases.slice(0, 1 + Math.min(2, Math.floor(d / 20)));
      const writes: Promise<unknown>[] = [];
      for (const [i, client] of clients.entries()) {
        // The last 30 clients leave after day 25: stale at the end.
        if ((i >= 120 && d >= 25) || next() > 0.3) continue;
        const release = offered[Math.floor(next() * offered.length)];
        last.set(client, { release, day });
        const sighting = { projectId, releaseId: release, client: adoptionClientHash(client), day };
        // Two instances record the same sighting at once, sometimes.
        writes.push(recordSighting(kv, sighting));
        if (next() < 0.3) writes.push(recordSighting(kv, sighting));
      }
      await Promise.all(writes);
    }
    // Another project's clients never count here.
    await recordSighting(kv, {
      projectId: 8,
      releaseId: 101,
      client: adoptionClientHash("install:x"),
      day: firstDay + days - 1,
    });

    const today = firstDay + days - 1;
    const truth = new Map<number, WindowCounts>();
    const total: WindowCounts = { d1: 0, d7: 0, d30: 0 };
    let stale = 0;
    for (const { release, day } of last.values()) {
      const age = today - day;
      if (age >= 30) {
        stale++;
        continue;
      }
      const counts = truth.get(release) ?? { d1: 0, d7: 0, d30: 0 };
      truth.set(release, counts);
      for (const target of [counts, total]) {
        if (age < 1) target.d1++;
        if (age < 7) target.d7++;
        target.d30++;
      }
    }

    await t.step("per release, total and stale equal the truth", async () => {
      const figures = await getAdoption(kv, projectId, today);
      assert.deepEqual(
        [...figures.releases].sort(([a], [b]) => a - b),
        [...truth].sort(([a], [b]) => a - b),
      );
      assert.deepEqual(figures.total, total);
      assert.equal(figures.stale, stale);
      assert.ok(total.d1 > 0 && total.d30 > total.d7 && stale > 0, "the script covers windows");
    });

    await t.step("a repeated or late sighting changes nothing", async () => {
      const before = await getAdoption(kv, projectId, today);
      const [client, seen] = [...last].find(([, value]) => value.day === today)!;
      const hash = adoptionClientHash(client);
      assert.equal(
        await recordSighting(kv, { projectId, releaseId: seen.release, client: hash, day: today }),
        false,
      );
      assert.equal(
        await recordSighting(kv, { projectId, releaseId: 101, client: hash, day: today - 3 }),
        false,
      );
      assert.deepEqual(await getAdoption(kv, projectId, today), before);
    });
  });
});
