/**
 * Adoption counts (src/reports/adoption.ts): a scripted run of sightings over
 * 60 days, with the same sighting sent by two instances at once, gives
 * exactly the truth of that run (distinct clients per release in the last
 * 1/7/30 days, the total, stale clients).
 */
import assert from "node:assert/strict";
import {
  adoptionClientHash,
  adoptionDay,
  getAdoption,
  recordSighting,
  type WindowCounts,
} from "../src/reports/adoption.ts";
import { setCacheRefreshMs } from "../src/kv/cache.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { changeRollout, startRollout } from "../src/releases/rollouts.ts";
import { join } from "node:path";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
  withStore,
} from "./helpers.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { createMetrics } from "../src/lib/metrics.ts";
import { rolloutGauges } from "../src/rollouts/metrics.ts";

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
  await withStore(async (store) => {
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
        writes.push(recordSighting(store, sighting));
        if (next() < 0.3) writes.push(recordSighting(store, sighting));
      }
      await Promise.all(writes);
    }
    // Another project's clients never count here.
    await recordSighting(store, {
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
      const figures = await getAdoption(store, projectId, today);
      assert.deepEqual(
        [...figures.releases].sort(([a], [b]) => a - b),
        [...truth].sort(([a], [b]) => a - b),
      );
      assert.deepEqual(figures.total, total);
      assert.equal(figures.stale, stale);
      assert.ok(total.d1 > 0 && total.d30 > total.d7 && stale > 0, "the script covers windows");
    });

    await t.step("a repeated or late sighting changes nothing", async () => {
      const before = await getAdoption(store, projectId, today);
      const [client, seen] = [...last].find(([, value]) => value.day === today)!;
      const hash = adoptionClientHash(client);
      assert.equal(
        await recordSighting(store, {
          projectId,
          releaseId: seen.release,
          client: hash,
          day: today,
        }),
        false,
      );
      assert.equal(
        await recordSighting(store, { projectId, releaseId: 101, client: hash, day: today - 3 }),
        false,
      );
      assert.deepEqual(await getAdoption(store, projectId, today), before);
    });
  });
});

Deno.test("the client API records which release each client was answered", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  await startRollout(app.store, v2.id, { percentage: 50 });
  const { secret } = await seedKey(app);
  const { secret: other } = await seedKey(app);
  const today = adoptionDay(Date.now());

  await t.step("each install id counts once, on the release it was answered", async () => {
    const truth = new Map<number, number>();
    for (let i = 0; i < 40; i++) {
      for (let repeat = 0; repeat < 3; repeat++) {
        const res = await app.request("/api/v1/projects/app/releases/latest", secret, {
          headers: { "x-install-id": `install-${i}` },
        });
        assert.equal(res.status, 200);
        const id = Number((await res.json()).release.id);
        if (repeat === 0) truth.set(id, (truth.get(id) ?? 0) + 1);
      }
    }
    // Without an install id the key is the client: two keys, two clients.
    for (const [key, first] of [[secret, true], [other, true], [other, false]] as const) {
      const res = await app.request("/api/v1/projects/app/releases/latest", key);
      assert.equal(res.status, 200);
      const id = Number((await res.json()).release.id);
      if (first) truth.set(id, (truth.get(id) ?? 0) + 1);
    }
    await app.adoption.flush();
    const figures = await getAdoption(app.store, project.id, today);
    assert.equal(figures.total.d1, 42);
    for (const [id, count] of truth) {
      assert.deepEqual(figures.releases.get(id), { d1: count, d7: count, d30: count }, `${id}`);
    }
    assert.ok((truth.get(v2.id) ?? 0) > 0, "some clients are in the rollout");
  });

  await t.step("a download counts its client on the downloaded release", async () => {
    const res = await app.request(`/api/v1/releases/${v2.id}/download`, secret, {
      headers: { "x-install-id": "downloader" },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await app.adoption.flush();
    const figures = await getAdoption(app.store, project.id, today);
    assert.equal(figures.total.d1, 43);
  });
});

Deno.test("the project page shows adoption as an SVG chart and a table", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  const today = adoptionDay(Date.now());
  const see = (client: string, releaseId: number, day: number) =>
    recordSighting(app.store, {
      projectId: project.id,
      releaseId,
      client: adoptionClientHash(client),
      day,
    });
  for (let i = 0; i < 3; i++) await see(`install:a${i}`, v2.id, today);
  await see("install:b", v1.id, today - 3);
  await see("install:c", v1.id, today - 40);
  const client = await signedInClient(app);

  await t.step("figures per release, the share on the latest and stale clients", async () => {
    const { res, html } = await client.page("/admin/projects/app/rollout");
    assert.equal(res.status, 200);
    const row = (id: number) =>
      new RegExp(
        `data-adoption-release-id="${id}".*?data-adoption-d1="true">(\\d+)<.*?data-adoption-d7="true">(\\d+)<.*?data-adoption-d30="true">(\\d+)<`,
      ).exec(html)?.slice(1);
    assert.deepEqual(row(v2.id), ["3", "3", "3"]);
    assert.deepEqual(row(v1.id), ["0", "1", "1"]);
    assert.match(html, /data-adoption-share="75%"/);
    assert.match(html, /data-adoption-stale="1"/);
    assert.match(html, /<figure class="chart" data-adoption-chart="true"><svg/);
    assert.doesNotMatch(html, / style="/, "no inline style (the CSP forbids it)");
  });
});

Deno.test("Prometheus series of rollout percentage and adoption", async () => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  await makeReleaseLatest(app.store, v1.id);
  await startRollout(app.store, v2.id, { percentage: 25 });
  const now = Date.now();
  const today = adoptionDay(now);
  const see = (client: string, releaseId: number, day: number) =>
    recordSighting(app.store, { projectId: project.id, releaseId, client, day });
  await see("a", v2.id, today);
  await see("b", v1.id, today - 2);
  await see("c", v1.id, today - 45);
  const metrics = createMetrics();
  metrics.addScrapeSource(() => rolloutGauges(app.store, now));
  const text = await metrics.render();
  assert.match(text, /# TYPE uds_rollout_percentage gauge/);
  assert.match(
    text,
    new RegExp(`uds_rollout_percentage\\{project="app",release_id="${v2.id}"\\} 25\\n`),
  );
  const series = (release: number, window: string) =>
    new RegExp(
      `uds_adoption_clients\\{project="app",release_id="${release}",window="${window}"\\} (\\d+)`,
    ).exec(text)?.[1];
  assert.deepEqual(
    [series(v2.id, "1d"), series(v2.id, "7d"), series(v1.id, "1d"), series(v1.id, "7d")],
    ["1", "1", "0", "1"],
  );
  assert.match(text, /uds_adoption_stale_clients\{project="app"\} 1\n/);
  await changeRollout(app.store, project.id, { halted: true });
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.match(
    await metrics.render(),
    new RegExp(`uds_rollout_percentage\\{project="app",release_id="${v2.id}"\\} 0\\n`),
  );
});

Deno.test("an updater feed records its client too", async () => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0", undefined, { filename: "app-1.0.0.exe" });
  const { secret } = await seedKey(app);
  for (const id of ["e1", "e2", "e1"]) {
    const res = await app.request("/feeds/electron/app/latest.yml", secret, {
      headers: { "x-user-staging-id": id },
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
  }
  await app.adoption.flush();
  const figures = await getAdoption(app.store, project.id, adoptionDay(Date.now()));
  assert.deepEqual(figures.releases.get(v1.id), { d1: 2, d7: 2, d30: 2 });
});

Deno.test("three instances on one KV: a client counts for its latest sighting, A/B/A included", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "uds-adoption-" });
  const kvPath = join(dir, "kv.sqlite3");
  await using a = await createTestApp({}, { kvPath });
  await using b = await createTestApp({}, { kvPath });
  await using c = await createTestApp({}, { kvPath });
  for (const instance of [a, b, c]) setCacheRefreshMs(instance.store, 0);
  const project = await seedProject(a, { slug: "app" });
  const v1 = await seedRelease(a, project.id, "1.0.0");
  const v2 = await seedRelease(a, project.id, "1.1.0");
  await makeReleaseLatest(a.store, v1.id);
  const { secret } = await seedKey(a);
  const clients = Array.from({ length: 16 }, (_, i) => `client-${i}`);
  /** The release `instance` answers each client, its sighting written. */
  const check = async (instance: TestApp) => {
    const answers = new Set<number>();
    for (const id of clients) {
      const res = await instance.request("/api/v1/projects/app/releases/latest", secret, {
        headers: { "x-install-id": id },
      });
      assert.equal(res.status, 200);
      answers.add(Number((await res.json()).release.id));
    }
    await instance.adoption.flush();
    return [...answers];
  };
  const counts = async () => {
    const figures = await getAdoption(c.store, project.id, adoptionDay(Date.now()));
    return [v1.id, v2.id].map((id) => figures.releases.get(id)?.d1 ?? 0);
  };

  await t.step("A answers 1.0.0, B the rollout's 1.1.0, A 1.0.0 again after the halt", async () => {
    assert.deepEqual(await check(a), [v1.id]);
    assert.deepEqual(await counts(), [16, 0]);
    await startRollout(a.store, v2.id, { percentage: 100 });
    assert.deepEqual(await check(b), [v2.id]);
    assert.deepEqual(await counts(), [0, 16]);
    await changeRollout(a.store, project.id, { halted: true });
    assert.deepEqual(await check(a), [v1.id]);
    assert.deepEqual(await counts(), [16, 0], "every client counts for 1.0.0, its latest sighting");
  });

  await t.step("the /metrics series agree", async () => {
    const metrics = createMetrics();
    metrics.addScrapeSource(() => rolloutGauges(c.store, Date.now()));
    const text = await metrics.render();
    assert.match(text, new RegExp(`release_id="${v1.id}",window="1d"\\} 16\\n`));
    // A release without clients has no series (or 0).
    assert.doesNotMatch(text, new RegExp(`release_id="${v2.id}",window="1d"\\} [1-9]`));
  });

  await t.step("a sighting written late never undoes a later one", async () => {
    const client = adoptionClientHash("install:client-0");
    const day = adoptionDay(Date.now());
    const late = { projectId: project.id, releaseId: v2.id, client, day, at: Date.now() - 60_000 };
    assert.equal(await recordSighting(b.store, late), false);
    assert.deepEqual(await counts(), [16, 0]);
  });
  await Deno.remove(dir, { recursive: true });
});
