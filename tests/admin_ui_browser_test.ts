/**
 * The admin UI as a newcomer meets it (issue 12), in Chromium at 1366×900 and
 * 390×844, against the real service with a data dir full enough for paging:
 * 56 projects, 55 releases in one project, 55 API keys and downloads spread
 * over the last days. Every page is saved as a screenshot at both sizes under
 * tests/screenshots/ (git-ignored) for a person to look at.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { countDownload } from "../src/stats/downloads.ts";
import {
  hasChromium,
  inViewport,
  launchBrowser,
  SCREENS,
  screenshot,
  sidewaysOverflow,
  signIn,
} from "./browser.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { makeDataTempDir, type ServerProcess, startServer } from "./server_process.ts";

const DAY_MS = 86_400_000;

/** Fills the data dir: enough rows for two pages everywhere, and downloads to chart. */
async function seed(dataDir: string) {
  const fx = await openDataDir(dataDir);
  for (let i = 1; i <= 55; i++) {
    const n = String(i).padStart(2, "0");
    await fx.project({ name: `Project ${n}`, slug: `p-${n}`, tags: i % 2 ? ["odd"] : ["even"] });
  }
  const archived = await fx.project({ name: "Old Tool", slug: "old-tool" });
  const { setProjectState } = await import("../src/projects/projects.ts");
  await setProjectState(fx.store, archived.id, "archived");
  const desktop = await fx.project({
    name: "Desktop App",
    slug: "desktop",
    description: "The desktop client.",
    tags: ["desktop"],
  });
  const releases = [];
  for (let i = 1; i <= 53; i++) {
    releases.push(
      await fx.release(desktop.id, `1.0.${i}`, new TextEncoder().encode(`build ${i}`), {
        release_notes: i === 53 ? "Fixes the updater.\nFaster start." : "",
      }),
    );
  }
  // The same version twice, both active: the page warns; the newer one is served.
  releases.push(await fx.release(desktop.id, "2.0.0", new Uint8Array(3000)));
  const latest = await fx.release(desktop.id, "2.0.0", new Uint8Array(1_600_000), {
    build: "77",
    release_notes: "Second upload of 2.0.0.",
  });
  const keys = [];
  for (let i = 1; i <= 55; i++) {
    keys.push((await fx.key({ name: `Updater ${String(i).padStart(2, "0")}` })).apiKey);
  }
  const now = Date.now();
  for (let day = 0; day < 20; day++) {
    for (let n = 0; n < (day % 5) + 1; n++) {
      await countDownload(fx.store, {
        releaseId: latest.id,
        projectId: desktop.id,
        keyId: keys[n % 3].id,
        at: new Date(now - day * DAY_MS),
      });
    }
  }
  fx.close();
  return { latest, topKey: keys[0] };
}

interface Visit {
  page: Page;
  base: string;
  screen: string;
}

/** Opens a page, checks it fits the screen, and saves its screenshot. */
async function visit(v: Visit, path: string, name: string): Promise<void> {
  await v.page.goto(`${v.base}${path}`);
  await shoot(v, name);
}

async function shoot(v: Visit, name: string): Promise<void> {
  assert.ok((await sidewaysOverflow(v.page)) <= 0, `${name}: no sideways scrolling`);
  await screenshot(v.page, `${name}-${v.screen}`);
}

/** The page's focused element's id. */
function focusedId(page: Page): Promise<string> {
  return page.evaluate<string>("document.activeElement?.id ?? ''");
}

Deno.test({
  name: "admin UI for a newcomer: errors in sight, latest marker, search, pages, charts",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const root = await makeDataTempDir("test-admin-ui");
  const dataDir = join(root, "service");
  const seeded = await seed(dataDir);
  let server: ServerProcess | null = null;
  let browser: Browser | null = null;
  try {
    server = await startServer(dataDir);
    browser = await launchBrowser();
    const base = server.baseUrl;

    for (const size of SCREENS) {
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
      });
      const page = await context.newPage();
      const foreign: string[] = [];
      page.on("request", (request) => {
        if (!request.url().startsWith(base)) foreign.push(request.url());
      });
      const v: Visit = { page, base, screen: size.name };

      await t.step(`${size.name}: sign-in page, favicon`, async () => {
        await visit(v, "/admin/login", "login");
        const icon = await page.getAttribute("link[rel=icon]", "href");
        assert.ok(icon);
        const res = await fetch(`${base}${icon}`);
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^image\/svg\+xml/);
        await res.body?.cancel();
        await signIn(v.page, v.base);
      });

      await t.step(`${size.name}: dashboard chart, table fallback and top keys`, async () => {
        await visit(v, "/admin", "dashboard");
        const chart = page.locator("[data-chart=downloads]");
        assert.equal(await chart.count(), 1);
        assert.ok(await chart.locator("svg").isVisible());
        assert.equal(await chart.locator("svg rect.chart-bar").count(), 30);
        // Downloads on 20 days: 1+2+3+4+5 four times = 60.
        assert.equal(await chart.locator("[data-downloads-total]").textContent(), "60");
        const today = await chart.locator("svg rect.chart-bar").last().getAttribute(
          "data-downloads",
        );
        assert.equal(today, "1");
        // The numbers for screen readers: a table with a row per day.
        assert.equal(await chart.locator("table tbody tr").count(), 30);
        const box = await chart.locator("svg").boundingBox();
        assert.ok(box && box.width <= size.width && box.height > 100, "readable on this screen");
        assert.equal(
          await page.getAttribute("#top-keys li:first-child", "data-top-key-id"),
          String(seeded.topKey.id),
        );
        await page.click("[data-chart=downloads] a:text('90 days')");
        await page.waitForURL(/days=90/);
        // 90 daily bars (hidden on a phone, which shows 13 weekly ones instead).
        assert.equal(await chart.locator("svg.chart-svg-daily rect.chart-bar").count(), 90);
        assert.equal(await chart.locator("svg.chart-svg-weekly rect.chart-bar").count(), 13);
        const shown = chart.locator(
          size.width <= 720 ? "svg.chart-svg-weekly" : "svg.chart-svg-daily",
        );
        assert.ok(await shown.isVisible(), "the chart for this screen is shown");
        assert.equal(await chart.locator("[data-downloads-total]").textContent(), "60");
        await shoot(v, "dashboard-90-days");
      });

      await t.step(`${size.name}: projects: search, pages of 50, create form first`, async () => {
        await visit(v, "/admin/projects", "projects");
        assert.equal(await page.locator("tr[data-project-slug]").count(), 50);
        assert.equal(await page.locator("a[rel=prev]").count(), 0);
        // The create form is above the list, folded: its summary is on the first screen.
        assert.ok(await inViewport(page, "#new-project > summary"));
        await Promise.all([page.waitForURL(/page=2/), page.click("a[rel=next]")]);
        assert.equal(await page.locator("tr[data-project-slug]").count(), 7);
        assert.equal(await page.locator("a[rel=next]").count(), 0);
        assert.equal(await page.locator("a[rel=prev]").count(), 1);
        await shoot(v, "projects-page-2");
        await page.fill("#search-q", "even");
        await Promise.all([page.waitForURL(/q=even/), page.click("form[role=search] button")]);
        assert.equal(await page.locator("tr[data-project-slug]").count(), 27);
        await page.goto(`${base}/admin/projects?q=p-4`);
        const slugs = await page.$$eval(
          "tr[data-project-slug]",
          (rows) => rows.map((row) => row.getAttribute("data-project-slug")),
        );
        assert.deepEqual(slugs, Array.from({ length: 10 }, (_, i) => `p-4${i}`));
      });

      await t.step(`${size.name}: a refused new project shows its error in sight`, async () => {
        await page.goto(`${base}/admin/projects`);
        await page.click("#new-project > summary");
        await page.fill("#project-name", "Another Desktop");
        await page.fill("#project-slug", "desktop"); // taken
        await page.click("#new-project button[type=submit]");
        await page.waitForSelector("[data-form-error]");
        assert.equal(await focusedId(page), "project-slug");
        assert.ok(await inViewport(page, "#project-slug"), "the invalid field is on screen");
        assert.ok(await inViewport(page, "#project-slug-error"), "its message too");
        assert.equal(await page.getAttribute("#project-slug-error", "role"), "alert");
        assert.equal(await page.getAttribute("[data-form-error]", "role"), "alert");
        assert.equal(await page.inputValue("#project-name"), "Another Desktop");
        // Messages start with a capital letter on screen, like the success messages.
        assert.equal(
          await page.evaluate<string>(
            `getComputedStyle(document.querySelector("[data-form-error]"), "::first-letter").textTransform`,
          ),
          "uppercase",
        );
        // The slug field says what a slug is when the browser refuses it.
        assert.match(await page.getAttribute("#project-slug", "title") ?? "", /lowercase letters/);
        await shoot(v, "projects-error");
      });

      await t.step(`${size.name}: project page: latest marker, duplicates, notes`, async () => {
        await visit(v, "/admin/projects/desktop/releases", "project");
        const latest = page.locator("tr[data-latest=true]");
        assert.equal(await latest.count(), 1);
        assert.equal(await latest.getAttribute("data-release-id"), String(seeded.latest.id));
        assert.ok(await latest.locator(".badge-latest").isVisible());
        assert.equal((await latest.locator(".badge-latest").textContent())?.trim(), "latest");
        assert.ok(await page.locator("[data-duplicate-version]").isVisible());
        assert.match(await page.textContent("[data-duplicate-version]") ?? "", /2\.0\.0/);
        await latest.locator("details.notes summary").click();
        assert.ok(await latest.getByText("Second upload of 2.0.0.").isVisible());
        // The SHA-256 breaks into two even lines; size and date do not break at all.
        const hash = await latest.locator("code.hash").boundingBox();
        assert.ok(hash && hash.height < 3 * 16, `hash in at most two lines (${hash?.height}px)`);
        assert.equal(
          await page.evaluate<string>(
            `getComputedStyle(document.querySelector("tr[data-latest] td[data-label=Size]")).whiteSpace`,
          ),
          "nowrap",
        );
        // Downloads of the release: 60 in all, in 30 days and in 90 days.
        assert.match(await latest.locator("td[data-label=Downloads]").textContent() ?? "", /60/);
        assert.ok(await page.locator("[data-chart=downloads] svg").isVisible());
        assert.equal(await page.locator("#releases tr[data-release-id]").count(), 50);
        await Promise.all([page.waitForURL(/page=2/), page.click("#releases a[rel=next]")]);
        assert.equal(await page.locator("#releases tr[data-release-id]").count(), 5);
        await page.goto(`${base}/admin/projects/desktop/releases?q=1.0.5`);
        const versions = await page.$$eval(
          "#releases tr[data-release-id] td[data-label=Version] strong",
          (cells) => cells.map((cell) => cell.textContent),
        );
        assert.deepEqual(versions, ["1.0.53", "1.0.52", "1.0.51", "1.0.50", "1.0.5"]);
      });

      await t.step(`${size.name}: a refused project edit shows its error in sight`, async () => {
        await page.goto(`${base}/admin/projects/desktop/settings`);
        await page.fill("#edit-tags", `desktop, ${"x".repeat(70)}`);
        await page.click("#settings button[type=submit]");
        await page.waitForSelector("#settings [data-form-error]");
        assert.equal(await focusedId(page), "edit-tags");
        assert.ok(await inViewport(page, "#edit-tags-error"));
        await shoot(v, "project-edit-error");
      });

      await t.step(`${size.name}: a failed upload says so, with the field outlined`, async () => {
        await page.goto(`${base}/admin/projects/desktop/releases`);
        // Only the server knows this is too long (the browser's limit is taken away).
        await page.evaluate(
          `document.getElementById("release-version").removeAttribute("maxlength")`,
        );
        await page.fill("#release-version", "9".repeat(200));
        await page.setInputFiles("#release-file", {
          name: "app.bin",
          mimeType: "application/octet-stream",
          buffer: Buffer.from("some bytes"),
        });
        await page.click("[data-upload-submit]");
        await page.waitForSelector("form[data-upload-state=error]");
        const status = await page.textContent("[data-upload-status]") ?? "";
        assert.doesNotMatch(status, /Checking and saving/);
        assert.match(status, /failed/i);
        assert.match(status, /128/);
        assert.equal(await page.getAttribute("#release-version", "aria-invalid"), "true");
        assert.ok(await page.locator("#release-version-error").isVisible());
        assert.equal(await page.getAttribute("[data-upload-progress]", "data-state"), "error");
        await shoot(v, "project-upload-error");
      });

      await t.step(`${size.name}: archived project: the upload form says so`, async () => {
        await visit(v, "/admin/projects/old-tool/releases", "project-archived");
        assert.ok(await page.locator("[data-archived-hint]").isVisible());
      });

      await t.step(
        `${size.name}: API keys: search, pages, errors, empty scopes warned`,
        async () => {
          await visit(v, "/admin/api-keys", "api-keys");
          assert.equal(await page.locator("tr[data-api-key-id]").count(), 50);
          await Promise.all([page.waitForURL(/page=2/), page.click("a[rel=next]")]);
          // 55 seeded keys, and two more for each screen size already tested.
          const expected = 5 + 2 * SCREENS.findIndex((screen) => screen.name === size.name);
          assert.equal(await page.locator("tr[data-api-key-id]").count(), expected);
          assert.equal(await page.locator("a[rel=next]").count(), 0);
          await page.goto(`${base}/admin/api-keys?q=updater+05`);
          assert.equal(await page.locator("tr[data-api-key-id]").count(), 1);
          await page.goto(`${base}/admin/api-keys?new=1`);
          assert.ok(await inViewport(page, "#key-name"), "the form is first");
          await page.fill("#key-name", "Nothing");
          await page.check("#scope-project_allow_list");
          // A project that does not exist (the field takes slugs, with suggestions).
          await page.fill("#key-project-slugs", "gone");
          await page.click("#new-key button[type=submit]");
          await page.waitForSelector("[data-form-error]");
          assert.match(await page.textContent("[data-form-error]") ?? "", /unknown project/);
          assert.ok(await inViewport(page, "#key-projects-error"));
          assert.equal(await focusedId(page), "key-project-slugs");
          await shoot(v, "api-keys-error");
          await page.fill("#key-project-slugs", "");
          await page.check("#scope-tag_allow_list");
          await page.fill("#key-other-tags", "t".repeat(65));
          await page.click("#new-key button[type=submit]");
          await page.waitForSelector("#key-tags-error");
          assert.match(await page.textContent("[data-form-error]") ?? "", /tag/);
          assert.equal(await focusedId(page), "key-other-tags");
          // An empty allow list is created (the contract), and the page says it reaches nothing.
          await page.fill("#key-other-tags", "");
          await Promise.all([
            page.waitForSelector("[data-api-key]"),
            page.click("#new-key button[type=submit]"),
          ]);
          assert.ok(await page.locator("[role=status][data-reaches-nothing]").isVisible());
          await shoot(v, "api-key-reaches-nothing");
        },
      );

      await t.step(`${size.name}: the new key is real, selectable text`, async () => {
        await page.goto(`${base}/admin/api-keys?new=1`);
        await page.fill("#key-name", `Selectable ${size.name}`);
        await Promise.all([
          page.waitForSelector("[data-api-key]"),
          page.click("#new-key button[type=submit]"),
        ]);
        const key = await page.getAttribute("[data-api-key]", "data-api-key") ?? "";
        assert.match(key, /^uds_/);
        assert.equal((await page.textContent("[data-api-key]"))?.trim(), key);
        await page.click("[data-api-key]", { clickCount: 3 });
        assert.equal((await page.evaluate<string>("getSelection().toString()")).trim(), key);
        assert.ok(await page.locator("[data-copy-key]").isVisible(), "copy works with script");
        await shoot(v, "api-key-created");
      });

      await t.step(`${size.name}: audit log, password page, not found`, async () => {
        await visit(v, "/admin/audit", "audit");
        const target = await page.textContent(
          "tr[data-audit-action='auth.sign_in'] td[data-label=Target]",
        );
        assert.equal(target?.trim(), 'account "admin"');
        await visit(v, "/admin/account/password", "password");
        await visit(v, "/admin/projects/no-such-project", "not-found");
      });

      await t.step(`${size.name}: signing out says so`, async () => {
        await page.goto(`${base}/admin`);
        await Promise.all([
          page.waitForURL(`${base}/admin/login`),
          page.click(".user-menu button[type=submit]"),
        ]);
        assert.match(await page.textContent(".flash-success") ?? "", /signed out/);
        await shoot(v, "signed-out");
      });

      await t.step(`${size.name}: nothing was loaded from anywhere else`, () => {
        assert.deepEqual(foreign, []);
      });
      await context.close();
    }

    await t.step("without JavaScript the copy buttons are hidden, the key selectable", async () => {
      const context = await browser!.newContext({
        viewport: { width: 390, height: 844 },
        javaScriptEnabled: false,
      });
      const page = await context.newPage();
      await signIn(page, base);
      await page.goto(`${base}/admin/api-keys?new=1`);
      await page.fill("#key-name", "No script");
      await Promise.all([
        page.waitForSelector("[data-api-key]"),
        page.click("#new-key button[type=submit]"),
      ]);
      const key = await page.getAttribute("[data-api-key]", "data-api-key") ?? "";
      assert.equal(await page.locator("[data-copy-key]").isVisible(), false);
      assert.equal(await page.locator("[data-copy-command]").isVisible(), false);
      await page.click("[data-api-key]", { clickCount: 3 });
      assert.equal((await page.evaluate<string>("getSelection().toString()")).trim(), key);
      await screenshot(page, "api-key-created-no-script-phone");
      await context.close();
    });
  } finally {
    await browser?.close();
    await server?.stop();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});
