/**
 * Issue 18 item 5 in Chromium: at 1024, 1366, 1920 and 390 px the releases
 * table fits its box and every button of every row (Edit, Archive/Activate)
 * is fully inside the viewport and inside the table's box, without sideways
 * scrolling.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { AdminClient, httpSender, randomBytes } from "./admin_helpers.ts";
import { hasChromium, launchBrowser, screenshot, sidewaysOverflow, signIn } from "./browser.ts";
import {
  makeDataTempDir,
  SERVER_ADMIN_PASSWORD,
  type ServerProcess,
  startServer,
} from "./server_process.ts";

const WIDTHS = [1024, 1366, 1920, 390] as const;

interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

Deno.test({
  name: "the releases table fits at every width with every action visible",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("release-table");
  let server: ServerProcess | null = null;
  let browser: Browser | null = null;
  try {
    server = await startServer(dataDir);
    const base = server.baseUrl;
    const admin = new AdminClient(httpSender([base]));
    assert.equal((await admin.signIn("admin", SERVER_ADMIN_PASSWORD)).status, 303);
    await admin.post("/admin/projects", { name: "Desktop", slug: "desktop" });
    await admin.page("/admin/projects/desktop");
    const versions = ["1.0.0", "1.1.0-beta.12+build.20260301", "2.0.0"];
    for (const [i, version] of versions.entries()) {
      const res = await admin.upload("/admin/projects/desktop/releases", [
        ["csrf_token", admin.csrfToken],
        ["version", version],
        ["build", `2026.03.${10 + i}-ci-pipeline-${i}`],
        ["release_notes", "Fixes and improvements. ".repeat(20)],
        [
          "file",
          new File(
            [randomBytes(2048) as BlobPart],
            `desktop-app-${version}-linux-x86_64-installer.AppImage`,
          ),
        ],
      ]);
      await res.body?.cancel();
      assert.equal(res.status, 303);
    }
    // One archived row, so both the Archive and the Activate labels are measured.
    const page0 = await admin.page("/admin/projects/desktop");
    const firstId = /data-release-id="(\d+)"/.exec(page0.html)![1];
    await admin.post(`/admin/releases/${firstId}/archive`);

    browser = await launchBrowser();
    for (const width of WIDTHS) {
      await t.step(`${width} px`, async () => {
        const context = await browser!.newContext({ viewport: { width, height: 900 } });
        try {
          const page = await context.newPage();
          await signIn(page, base);
          await page.goto(`${base}/admin/projects/desktop/releases`);
          assert.ok((await sidewaysOverflow(page)) <= 0, "no sideways scrolling");
          const measured = await page.evaluate<
            {
              wrap: Box;
              tableWidth: number;
              wrapWidth: number;
              buttons: Array<Box & { label: string }>;
            }
          >(`(() => {
            const box = (node) => {
              const r = node.getBoundingClientRect();
              return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
            };
            const wrap = document.querySelector("#releases .table-wrap");
            const table = wrap.querySelector("table");
            const buttons = [...wrap.querySelectorAll("td[data-label=Actions] .button")]
              .map((node) => ({ ...box(node), label: node.textContent.trim() }));
            return {
              wrap: box(wrap),
              tableWidth: table.scrollWidth,
              wrapWidth: wrap.clientWidth,
              buttons,
            };
          })()`);
          assert.ok(
            measured.tableWidth <= measured.wrapWidth,
            `table ${measured.tableWidth} px in a box of ${measured.wrapWidth} px`,
          );
          // Edit and Archive/Activate on every row, Make latest on active rows that are not latest.
          assert.ok(measured.buttons.length >= versions.length * 2, `${measured.buttons.length}`);
          const labels = measured.buttons.map((button) => button.label).sort();
          assert.deepEqual([...new Set(labels)], ["Activate", "Archive", "Edit", "Make latest"]);
          for (const button of measured.buttons) {
            const where = `${button.label} at ${button.left}–${button.right}`;
            assert.ok(button.left >= 0 && button.right <= width, `${where}: inside the viewport`);
            assert.ok(
              button.left >= measured.wrap.left - 0.5 && button.right <= measured.wrap.right + 0.5,
              `${where}: inside the table's box ${measured.wrap.left}–${measured.wrap.right}`,
            );
            assert.ok(button.right - button.left > 20, `${where}: not squeezed`);
          }
          await screenshot(page, `release-table-${width}`);
        } finally {
          await context.close();
        }
      });
    }
  } finally {
    await browser?.close();
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
