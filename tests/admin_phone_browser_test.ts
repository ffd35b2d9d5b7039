/**
 * Issue 18 item 6 in Chromium: the phone header takes at most two lines, the
 * 90-day chart is readable on a phone (weekly bars), the key expiry field says
 * the local equivalent of its UTC time, and the dashboard's "Upload a
 * release" opens an upload form.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import {
  hasChromium,
  inViewport,
  launchBrowser,
  screenshot,
  sidewaysOverflow,
  signIn,
} from "./browser.ts";
import {
  makeDataTempDir,
  SERVER_ADMIN_PASSWORD,
  type ServerProcess,
  startServer,
} from "./server_process.ts";

Deno.test({
  name: "small things on a phone and in the key form",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("phone");
  let server: ServerProcess | null = null;
  let browser: Browser | null = null;
  try {
    server = await startServer(dataDir);
    const base = server.baseUrl;
    browser = await launchBrowser();

    await t.step(
      "390 px: the header takes two lines; the 90-day chart has weekly bars",
      async () => {
        const context = await browser!.newContext({ viewport: { width: 390, height: 844 } });
        try {
          const page = await context.newPage();
          await signIn(page, base);
          for (const path of ["/admin?days=90", "/admin/projects", "/admin/api-keys"]) {
            await page.goto(`${base}${path}`);
            // Parts whose vertical centres are within 12 px share a line.
            const header = await page.evaluate<{ height: number; lines: number; boxes: string }>(
              `(() => {
            const parts = [".brand", ".main-nav", ".user-menu"].map((s) => document.querySelector(s).getBoundingClientRect());
            const centres = parts.map((r) => (r.top + r.bottom) / 2).sort((a, b) => a - b);
            const lines = centres.filter((c, i) => i === 0 || c - centres[i - 1] > 12).length;
            return {
              height: document.querySelector(".site-header").getBoundingClientRect().height,
              lines,
              boxes: JSON.stringify(parts.map((r) => [r.left, r.top, r.right, r.bottom].map(Math.round))),
            };
          })()`,
            );
            assert.ok(
              header.lines <= 2,
              `${path}: header in ${header.lines} lines ${header.boxes}`,
            );
            assert.ok(header.height <= 110, `${path}: header ${header.height} px high`);
            assert.ok((await sidewaysOverflow(page)) <= 0, `${path}: no sideways scrolling`);
            const lastLink = await page.evaluate<number>(
              `[...document.querySelectorAll(".main-nav a")].at(-1).getBoundingClientRect().right`,
            );
            assert.ok(lastLink <= 390, `${path}: every link of the menu shows (${lastLink} px)`);
          }
          await page.goto(`${base}/admin?days=90`);
          const chart = await page.evaluate<{ daily: number; weekly: number; bars: number }>(
            `(() => {
          const shown = (s) => document.querySelector(s).getBoundingClientRect().height;
          const weekly = document.querySelector(".chart-svg-weekly");
          const slot = weekly.getBoundingClientRect().width / weekly.querySelectorAll("rect").length;
          return { daily: shown(".chart-svg-daily"), weekly: shown(".chart-svg-weekly"), bars: slot };
        })()`,
          );
          assert.equal(chart.daily, 0, "the 90 daily bars are hidden on a phone");
          assert.ok(chart.weekly >= 120, `the weekly chart is ${chart.weekly} px high`);
          assert.ok(chart.bars >= 20, `a week's bar has ${chart.bars} px`);
          await screenshot(page, "dashboard-390");
        } finally {
          await context.close();
        }
      },
    );

    await t.step("1366 px: the 90-day chart keeps daily bars", async () => {
      const context = await browser!.newContext({ viewport: { width: 1366, height: 900 } });
      try {
        const page = await context.newPage();
        await signIn(page, base);
        await page.goto(`${base}/admin?days=90`);
        const daily = await page.evaluate<number>(
          `document.querySelector(".chart-svg-daily").getBoundingClientRect().height`,
        );
        assert.ok(daily >= 120);
      } finally {
        await context.close();
      }
    });

    await t.step("the key expiry says its local equivalent", async () => {
      const context = await browser!.newContext({
        viewport: { width: 1366, height: 900 },
        timezoneId: "America/New_York",
        locale: "en-US",
      });
      try {
        const page = await context.newPage();
        await signIn(page, base);
        await page.goto(`${base}/admin/api-keys?new=1#new-key`);
        await page.fill("#key-expires", "2026-12-31T23:59");
        const text = await page.textContent("#key-expires-local");
        assert.match(text ?? "", /Dec 31, 2026, 6:59\s?PM your time \(America\/New_York\)/);
        assert.match(
          (await page.textContent("[data-can-download-hint]")) ?? "",
          /api key permission denied/,
        );
      } finally {
        await context.close();
      }
    });

    await t.step("after an archive or a search the page is back at the table", async () => {
      const admin = new AdminClient(httpSender([base]));
      assert.equal((await admin.signIn("admin", SERVER_ADMIN_PASSWORD)).status, 303);
      await admin.post("/admin/projects", {
        name: "Desktop",
        slug: "desktop",
        description: "A long description. ".repeat(40),
      });
      await admin.page("/admin/projects/desktop");
      for (const version of ["1.0.0", "1.1.0"]) {
        const res = await admin.upload("/admin/projects/desktop/releases", [
          ["csrf_token", admin.csrfToken],
          ["version", version],
          ["file", new File(["bytes"], `app-${version}.bin`)],
        ]);
        await res.body?.cancel();
      }
      const context = await browser!.newContext({ viewport: { width: 1366, height: 700 } });
      try {
        const page = await context.newPage();
        await signIn(page, base);
        await page.goto(`${base}/admin/projects/desktop/releases`);
        await Promise.all([
          page.waitForURL(/#releases$/),
          page.click("#releases button:text-is('Archive')"),
        ]);
        await page.waitForLoadState("load");
        assert.ok(await inViewport(page, "#releases-title"), "archive: back at the table");
        assert.ok(await page.evaluate<number>("scrollY") > 0, "not at the top");
        await page.goto(`${base}/admin/projects/desktop/releases`);
        await page.fill("#search-q", "1.1");
        await Promise.all([
          page.waitForURL(/q=1\.1#releases$/),
          page.click("#releases form[role=search] button"),
        ]);
        await page.waitForLoadState("load");
        assert.ok(await inViewport(page, "#releases-title"), "search: back at the table");
      } finally {
        await context.close();
      }
    });

    await t.step("the dashboard's Upload a release opens an upload form", async () => {
      const context = await browser!.newContext({ viewport: { width: 1366, height: 900 } });
      try {
        const page = await context.newPage();
        await signIn(page, base);
        await Promise.all([
          page.waitForURL(`${base}/admin/upload`),
          page.click("text=Upload a release"),
        ]);
        assert.equal(await page.locator("h1").textContent(), "Upload a release");
      } finally {
        await context.close();
      }
    });
  } finally {
    await browser?.close();
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
