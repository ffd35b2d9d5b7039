/**
 * A project's pages in Chromium at 1366×900 and 390×844 (docs/admin-ui.md "A project's
 * pages"), with realistic data: 20 releases, a gated rollout in progress with install
 * reports, a critical release, a minimum version and a signed Sparkle appcast. The overview
 * says what clients get, shows the stage as a progress bar with what it waits on, lists the
 * newest releases with their marks, and stays within 1,800 px on a laptop; release health
 * reads right with an hour of reports and with 30 days; a rollback reads as one. Screenshots
 * go to tests/screenshots/project-*.png.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { setRolloutGates } from "../src/rollouts/gate_records.ts";
import { rollBack, setMinimumVersion, setReleaseCritical } from "../src/releases/release_policy.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import { setSparkleFeedKey } from "../src/feeds/sparkle_keys.ts";
import { reportHourlyKey } from "../src/kv/keys.ts";
import { ADMIN_PASSWORD, createAdminTestApp } from "./admin_helpers.ts";
import {
  hasChromium,
  launchBrowser,
  SCREENS,
  screenshot,
  sidewaysOverflow,
  signIn,
} from "./browser.ts";
import {
  checkIn,
  idsInRollout,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
} from "./helpers.ts";
import type { Release } from "../src/releases/types.ts";

/** The overview's full height at 1366×900 at most: two screens. */
const OVERVIEW_MAX_HEIGHT = 1_800;
const HOUR_MS = 3_600_000;

/** 20 releases, the newest in a gated rollout at its 25% stage with an hour of reports. */
async function seedRealistic(app: TestApp, slug: string, versionOf: (i: number) => string) {
  const project = await seedProject(app, {
    slug,
    name: "Desktop app",
    description: "The desktop client for Windows, macOS and Linux.",
    tags: ["desktop", "stable"],
  });
  const releases = [];
  for (let i = 0; i < 20; i++) {
    releases.push(
      await seedRelease(app, project.id, versionOf(i), undefined, {
        filename: `desktop-app-${versionOf(i)}-x86_64-setup.exe`,
        build: `2026.11.${String(i + 1).padStart(2, "0")}`,
        release_notes: "Fixes and improvements.",
      }),
    );
  }
  const [newest, previous] = [releases[19], releases[18]];
  await makeReleaseLatest(app.store, previous.id);
  await startRollout(app.store, newest.id, { percentage: 25 });
  await setRolloutGates(app.store, {
    projectId: project.id,
    gates: {
      stages: [5, 25, 50, 100],
      min_installs: 200,
      min_hours: 6,
      advance_below: 2,
      halt_at: 5,
    },
  });
  await setReleaseCritical(app.store, { releaseId: releases[15].id, critical: true });
  await setMinimumVersion(app.store, { projectId: project.id, version: releases[10].version });
  await setSparkleFeedKey(app.store, {
    project_id: project.id,
    public_key: "V0R4Bx0sKQyV6n7dZ6nL0A3lq6C6yPZ8nQ8iD5b2w0E=",
    bundle_identifier: "com.example.desktop",
    set_by: "admin",
  });
  return { project, releases, newest, previous };
}

/** `n` installs the rollout offered `release` to (they check in first) report it; one in 50 fails. */
async function reportInstalls(
  app: TestApp,
  { slug, release, n }: { slug: string; release: Release; n: number },
) {
  const { secret } = await seedKey(app);
  const installIds = idsInRollout(release, { percentage: 25, count: n, prefix: `${slug}-` });
  await checkIn(app, secret, { slug, installIds });
  for (const [i, installId] of installIds.entries()) {
    const res = await app.request(`/reports/v1/projects/${slug}`, secret, {
      method: "POST",
      headers: { "content-type": "application/json", "x-install-id": installId },
      body: JSON.stringify(
        i % 50 === 0
          ? {
            event: "crashed",
            version: release.version,
            reason: "the updater could not replace the running file",
          }
          : { event: "installed", version: release.version },
      ),
    });
    await res.body?.cancel();
  }
  await app.reports.flush();
}

async function pageHeight(page: Page): Promise<number> {
  return await page.evaluate<number>("document.documentElement.scrollHeight");
}

/** Texts of the elements matching `selector`. */
async function texts(page: Page, selector: string): Promise<string[]> {
  return await page.locator(selector).allInnerTexts();
}

Deno.test({
  name: "a project's pages: overview at a glance, release health, rollback, at 1366 and 390 px",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  await using app = await createAdminTestApp();
  const realistic = await seedRealistic(app, "desktop", (i) => `1.${i}.0`);
  await reportInstalls(app, { slug: "desktop", release: realistic.newest, n: 40 });
  // The long case: a 64-character slug, long versions and file names.
  const longSlug = "s".repeat(56) + "-desktop";
  const long = await seedRealistic(
    app,
    longSlug,
    (i) => `2026.11.${i}-beta.${"1234567890".repeat(3)}+build.${i}`,
  );
  // 30 days of reports for the long project's rollout release, written as the hourly counters.
  const nowHour = Math.floor(Date.now() / HOUR_MS);
  for (let h = 0; h < 30 * 24; h += 5) {
    await app.kv.set(
      reportHourlyKey(long.newest.id, "installed", nowHour - h),
      new Deno.KvU64(20n + BigInt(h % 7)),
    );
    if (h % 3 === 0) {
      await app.kv.set(reportHourlyKey(long.newest.id, "crash", nowHour - h), new Deno.KvU64(1n));
    }
  }
  // A rolled-back project: 1.2.0 was latest, rolled back to 1.1.0.
  const rb = await seedProject(app, { slug: "rolled" });
  for (const version of ["1.0.0", "1.1.0", "1.2.0"]) await seedRelease(app, rb.id, version);
  const back = await rollBack(app.store, rb.id);

  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, app.app.fetch);
  const base = `http://127.0.0.1:${server.addr.port}`;
  let browser: Browser | null = null;
  try {
    browser = await launchBrowser();
    for (const screen of SCREENS) {
      const page = await browser.newPage({
        viewport: { width: screen.width, height: screen.height },
      });
      await signIn(page, base, ADMIN_PASSWORD);
      const shot = async (name: string) => {
        await screenshot(page, `project-${name}-${screen.width}`);
        const wide = await page.evaluate<string[]>(`[...document.querySelectorAll("main *")]
          .filter((el) => !el.closest(".table-wrap, .visually-hidden"))
          .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth)
          .map((el) => el.tagName + "." + el.className + " " + el.getBoundingClientRect().right)`);
        assert.deepEqual(wide, [], `${name}: nothing sideways`);
        assert.ok((await sidewaysOverflow(page)) <= 0, `${name}: no sideways scrolling`);
      };

      await t.step(`${screen.name}: the overview at a glance`, async () => {
        await page.goto(`${base}/admin/projects/desktop`);
        const offer = (await texts(page, "[data-offer]"))[0];
        assert.match(offer, /25% of installs get 1\.19\.0 \(staged rollout\)/);
        assert.equal(
          await page.locator("[data-rollout-progress] progress").getAttribute("value"),
          "25",
        );
        assert.match(
          (await texts(page, "[data-progress-waiting]"))[0],
          /waits for 200 successful installs \(39 so far\)/,
        );
        assert.deepEqual(await texts(page, ".stage-steps li.is-current"), ["25%"]);
        const rows = page.locator("#latest-releases tr[data-release-id]");
        assert.equal(await rows.count(), 8);
        assert.match(await rows.first().innerText(), /1\.19\.0[\s\S]*rolling out/i);
        assert.match(
          await page.locator(`tr[data-release-id="${realistic.previous.id}"]`).innerText(),
          /latest/i,
        );
        assert.match(
          await page.locator(`tr[data-release-id="${realistic.releases[15].id}"]`).innerText(),
          /critical/i,
        );
        assert.equal(
          await page.locator("#upload[open], #edit[open]").count(),
          0,
          "rare forms folded",
        );
        const tabs = await page.$$eval(
          "[data-project-tabs] a",
          (links) => links.map((link) => link.getAttribute("href")),
        );
        assert.deepEqual(
          tabs,
          ["", "/releases", "/rollout", "/feeds", "/settings"].map((tab) =>
            `/admin/projects/desktop${tab}`
          ),
        );
        // The tabs take one row, on a phone too.
        const tops = await page.$$eval(
          "[data-project-tabs] a",
          (links) => links.map((link) => Math.round(link.getBoundingClientRect().top)),
        );
        const widths = await page.$$eval(
          "[data-project-tabs] a",
          (links) => links.map((link) => Math.round(link.getBoundingClientRect().width)),
        );
        assert.equal(new Set(tops).size, 1, `tabs in one row: ${tops} ${widths}`);
        if (screen.width === 1366) {
          const height = await pageHeight(page);
          assert.ok(height <= OVERVIEW_MAX_HEIGHT, `overview ${height} px high`);
        }
        await shot("overview");
        await page.goto(`${base}/admin/projects/${longSlug}`);
        await shot("overview-long");
      });

      await t.step(`${screen.name}: releases, marks and the minimum version`, async () => {
        await page.goto(`${base}/admin/projects/desktop/releases`);
        assert.equal(await page.locator("#releases tr[data-release-id]").count(), 20);
        assert.match(
          await page.locator(`tr[data-release-id="${realistic.releases[10].id}"]`).innerText(),
          /minimum/i,
        );
        assert.match(
          await page.locator(`tr[data-release-id="${realistic.releases[15].id}"]`).innerText(),
          /critical/i,
        );
        assert.equal(await page.locator("[data-signature-fields][open]").count(), 0);
        await shot("releases");
        await page.goto(`${base}/admin/projects/${longSlug}/releases`);
        await shot("releases-long");
      });

      await t.step(`${screen.name}: release health at one hour and at 30 days`, async () => {
        await page.goto(`${base}/admin/projects/desktop/rollout`);
        const chart = page.locator("[data-report-chart]");
        assert.equal(await chart.getAttribute("data-bucket"), "hour");
        // One hour of reports is one bar among 24, not the whole width.
        const bars = await page.locator("[data-report-chart] .health-svg").first().locator("g")
          .count();
        assert.equal(bars, 1);
        assert.equal(await page.locator("[data-threshold]").count(), 2);
        const ticks = await texts(page, "[data-report-chart] .chart-axis-ticks >> nth=0 >> span");
        assert.equal(ticks.length, 5);
        assert.match(await page.locator("[data-stage='25']").innerText(), /running/);
        assert.match(
          (await texts(page, "form[action$='/rollout/rollback'] button"))[0],
          /^Roll back 1\.19\.0 → 1\.18\.0$/,
        );
        await shot("rollout");
        await page.goto(`${base}/admin/projects/${longSlug}/rollout`);
        assert.equal(await page.locator("[data-report-chart]").getAttribute("data-bucket"), "day");
        await shot("rollout-30-days");
      });

      await t.step(`${screen.name}: a rollback reads as one`, async () => {
        await page.goto(`${base}/admin/projects/rolled`);
        assert.match(
          (await texts(page, "[data-offer]"))[0],
          /Every client gets 1\.1\.0: 1\.2\.0 was rolled back/,
        );
        const row = page.locator(`tr[data-release-id="${back.release_id}"]`);
        assert.match(await row.innerText(), /rolled back/i);
        await shot("rolled-back-overview");
        await page.goto(`${base}/admin/projects/rolled/releases`);
        assert.match(
          await page.locator(`#releases tr[data-release-id="${back.release_id}"]`).innerText(),
          /rolled back/i,
        );
        assert.match(
          await page.locator("[data-higher-version-not-latest]").innerText(),
          /undo the rollback/,
        );
        assert.deepEqual(
          await texts(
            page,
            `#releases tr[data-release-id="${back.release_id}"] form[action$="/make-latest"] button`,
          ),
          ["Make latest (undo rollback)"],
        );
        await shot("rolled-back-releases");
        await page.goto(`${base}/admin/releases/${back.release_id}`);
        assert.equal(await page.locator("h1 [data-mark=rolled-back]").count(), 1);
        await page.goto(`${base}/admin/projects/rolled/rollout`);
        assert.equal(await page.locator("form[action$='/rollout/rollback']").count(), 0);
        assert.match(
          await page.locator("[data-rollback=none]").innerText(),
          /1\.2\.0 is rolled back already/,
        );
        await shot("rolled-back-rollout");
      });

      await t.step(`${screen.name}: feeds and settings`, async () => {
        await page.goto(`${base}/admin/projects/desktop/feeds`);
        assert.equal(await page.locator("[data-sparkle-signed=true]").count(), 1);
        await shot("feeds");
        await page.goto(`${base}/admin/projects/${longSlug}/settings`);
        await shot("settings-long");
      });
      await page.close();
    }
  } finally {
    await browser?.close();
    await server.shutdown();
  }
});
