/**
 * The release safety card and its routes (docs/rollouts.md "Health gates",
 * "A way back", "Critical updates and a minimum version"): gates set from
 * the form (bad input shown again with 400), the card's stage figures, what
 * the stage waits on and why it halted, the chart with its table, roll
 * back, and the policy headers on the latest-release answer.
 */
import assert from "node:assert/strict";
import { evaluateGates } from "../src/rollouts/gates.ts";
import { getReleasePolicy, setReleaseCritical } from "../src/releases/release_policy.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { getRolloutGates, setRolloutGates } from "../src/rollouts/gate_records.ts";
import { getRollout, startRollout } from "../src/releases/rollouts.ts";
import { ADMIN_PASSWORD, createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { hasChromium, launchBrowser, signIn } from "./browser.ts";
import {
  checkIn,
  dumpKv,
  idsInRollout,
  lastAudit,
  seedKey,
  seedProject,
  seedRelease,
} from "./helpers.ts";
import { createMetrics } from "../src/lib/metrics.ts";
import { gateGauges } from "../src/rollouts/gate_metrics.ts";

Deno.test("release safety card: gates, stage figures, halt reason, rollback, policy", async (t) => {
  await using app = await createAdminTestApp();
  const admin = await signedInClient(app);
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret } = await seedKey(app);
  await startRollout(app.store, v2.id, { percentage: 10 });

  await t.step("bad gates show the page again with 400 and the message", async () => {
    const res = await admin.post("/admin/projects/app/rollout/gates", {
      stages: "50, 10",
      min_installs: "20",
      min_hours: "0",
      advance_below: "2",
      halt_at: "5",
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /Stages must be ascending percentages/);
    assert.match(html, /value="50, 10"/);
  });

  await t.step("gates set from the form; the card says what the stage waits on", async () => {
    const res = await admin.post("/admin/projects/app/rollout/gates", {
      stages: "10, 100",
      min_installs: "20",
      min_hours: "0",
      advance_below: "2",
      halt_at: "5",
    });
    assert.equal(res.status, 303);
    await res.body?.cancel();
    assert.deepEqual((await getRolloutGates(app.store, project.id))?.gates.stages, [10, 100]);
    const html = await (await admin.page("/admin/projects/app/rollout")).html;
    assert.match(html, /data-gates="running"/);
    assert.match(html, /waits for 20 successful installs \(0 so far\)/);
  });

  await t.step("failures halt it; the card says why and counts them per stage", async () => {
    // Installs the 10% stage reaches, offered 1.1.0 before they report it.
    const installIds = idsInRollout(v2, { percentage: 10, count: 25 });
    await checkIn(app, secret, { slug: "app", installIds });
    for (const [i, installId] of installIds.entries()) {
      const res = await app.request("/reports/v1/projects/app", secret, {
        method: "POST",
        headers: { "content-type": "application/json", "x-install-id": installId },
        body: JSON.stringify(
          i < 5
            ? { event: "crashed", version: "1.1.0", reason: "boom" }
            : { event: "installed", version: "1.1.0" },
        ),
      });
      await res.body?.cancel();
    }
    await app.reports.flush();
    const changes = await evaluateGates(app.store, { nowMs: Date.now() });
    assert.equal(changes[0]?.action, "halted");
    // The change's webhook event, audit entry and Prometheus series.
    const events = (await dumpKv(app.kv))
      .filter(([key]) => key[0] === "webhook_events")
      .map(([, value]) => value as { type: string; data: Record<string, unknown> });
    const event = events.find((e) => e.data.by === "gates");
    assert.equal(event?.type, "rollout.changed");
    assert.equal(event?.data.action, "halted");
    assert.match(String(event?.data.reason), /5 of 25 reports failed/);
    assert.equal((await lastAudit(app)).action, "rollout.gate_halted");
    const metrics = createMetrics();
    metrics.addScrapeSource(() => gateGauges(app.store));
    const text = await metrics.render();
    assert.match(text, /uds_rollout_gate_changes\{project="app",action="halted"\} 1\n/);
    assert.match(
      text,
      /uds_rollout_stage_reports\{project="app",release_id="\d+",outcome="failed"\} 5\n/,
    );
    const html = await (await admin.page("/admin/projects/app/rollout")).html;
    assert.match(html, /data-halt-reason="true">Halted: 5 of 25 reports failed \(20%\)/);
    assert.match(html, /data-stage-installs="true">20</);
    assert.match(html, /data-stage-failures="true">5</);
    // The stage's outcome says who ended it and why; the history lists the change.
    assert.match(html, /data-stage-why="true">by the gates: 5 of 25 reports failed \(20%\)/);
    assert.match(html, /data-rollout-history/);
    assert.match(html, /data-report-chart/);
    assert.match(html, /<table class="data-table" data-report-hours="true">/);
    assert.match(html, /crash: boom/);
    assert.doesNotMatch(html, /style=/);
  });

  await t.step("roll back: the latest answer names the rolled-back version", async () => {
    const res = await admin.post("/admin/projects/app/rollout/rollback", {});
    assert.equal(res.status, 303);
    await res.body?.cancel();
    assert.equal((await getRollout(app.store, project.id))?.halted, true);
    assert.equal((await getReleasePolicy(app.store, project.id)).rolled_back?.to_id, v1.id);
    const latest = await app.request("/api/v1/projects/app/releases/latest", secret, {
      headers: { "x-install-id": "i-6" },
    });
    assert.equal(latest.headers.get("x-rolled-back"), "1.1.0");
    assert.equal((await latest.json()).release.id, v1.id);
  });

  await t.step(
    "policy: critical release and minimum version as headers, JSON unchanged",
    async () => {
      const before = await (await app.request("/api/v1/projects/app/releases/latest", secret))
        .text();
      const res = await admin.post("/admin/projects/app/rollout/policy", {
        minimum_version: "1.0.0",
        critical: String(v1.id),
      });
      assert.equal(res.status, 303);
      await res.body?.cancel();
      const latest = await app.request("/api/v1/projects/app/releases/latest", secret);
      assert.equal(latest.headers.get("x-update-critical"), "true");
      assert.equal(latest.headers.get("x-minimum-version"), "1.0.0");
      assert.equal(await latest.text(), before);
      const bad = await admin.post("/admin/projects/app/rollout/policy", {
        minimum_version: "1 0",
      });
      assert.equal(bad.status, 400);
      assert.match(await bad.text(), /Minimum supported version must be/);
    },
  );
});

Deno.test({
  name: "release safety card: fits a phone and a laptop, long versions and reasons included",
  ignore: !hasChromium,
  async fn() {
    await using app = await createAdminTestApp();
    const project = await seedProject(app, { slug: "app" });
    const v1 = await seedRelease(app, project.id, "1.0.0");
    const v2 = await seedRelease(app, project.id, `1.1.0-${"beta".repeat(12)}`);
    await makeReleaseLatest(app.store, v1.id);
    const { secret } = await seedKey(app);
    await startRollout(app.store, v2.id, { percentage: 10 });
    await setRolloutGates(app.store, {
      projectId: project.id,
      gates: {
        stages: [10, 50, 100],
        min_installs: 20,
        min_hours: 6,
        advance_below: 2,
        halt_at: 5,
      },
    });
    const installIds = idsInRollout(v2, { percentage: 10, count: 30 });
    await checkIn(app, secret, { slug: "app", installIds });
    for (const [i, installId] of installIds.entries()) {
      const res = await app.request("/reports/v1/projects/app", secret, {
        method: "POST",
        headers: { "content-type": "application/json", "x-install-id": installId },
        body: JSON.stringify(
          i < 3
            ? { event: "crashed", version: v2.version, reason: "x".repeat(200) }
            : { event: "installed", version: v2.version },
        ),
      });
      await res.body?.cancel();
    }
    await app.reports.flush();
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, app.app.fetch);
    const base = `http://127.0.0.1:${server.addr.port}`;
    const browser = await launchBrowser();
    try {
      for (const width of [390, 1366]) {
        const page = await browser.newPage({ viewport: { width, height: 800 } });
        await signIn(page, base, ADMIN_PASSWORD);
        await page.goto(`${base}/admin/projects/app/rollout#release-safety`);
        assert.ok(await page.isVisible("[data-report-chart]"));
        // The card's own boxes stay within the screen (a table scrolls inside its wrapper).
        const wide = await page.evaluate(`[...document.querySelectorAll("#release-safety *")]
          .filter((el) => !el.closest(".table-wrap"))
          .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth)
          .map((el) => el.tagName + "." + el.className)`) as string[];
        assert.deepEqual(wide, [], `sideways at ${width} px`);
        await page.close();
      }
    } finally {
      await browser.close();
      await server.shutdown();
    }
  },
});

Deno.test("the policy form leaves the critical marks of releases its card does not list", async () => {
  await using app = await createAdminTestApp();
  const admin = await signedInClient(app);
  const project = await seedProject(app, { slug: "app" });
  const oldest = await seedRelease(app, project.id, "1.0.0");
  for (let i = 1; i <= 12; i++) await seedRelease(app, project.id, `1.${i}.0`);
  await setReleaseCritical(app.store, { releaseId: oldest.id, critical: true });
  const { html } = await admin.page("/admin/projects/app/rollout");
  assert.doesNotMatch(html, new RegExp(`name="critical" value="${oldest.id}"`));
  const res = await admin.post("/admin/projects/app/rollout/policy", { minimum_version: "" });
  assert.equal(res.status, 303);
  await res.body?.cancel();
  assert.deepEqual((await getReleasePolicy(app.store, project.id)).critical_ids, [oldest.id]);
});
