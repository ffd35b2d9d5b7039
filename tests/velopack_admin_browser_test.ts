/**
 * The project page's card of server-made deltas and patches in Chromium at 390 and 1366 px:
 * its field and button fit, an out-of-range value comes back with its
 * message beside the field, a saved one shows its flash. Screenshots of the
 * card: tests/screenshots/velopack-card-*.png.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import {
  hasChromium,
  launchBrowser,
  SCREENS,
  SCREENSHOTS,
  sidewaysOverflow,
  signIn,
} from "./browser.ts";
import { ADMIN_PASSWORD, createAdminTestApp } from "./admin_helpers.ts";
import { seedProject } from "./helpers.ts";

Deno.test({
  name: "the server-made deltas and patches card in a browser",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  await using app = await createAdminTestApp();
  for (const size of SCREENS) await seedProject(app, { slug: `deskapp-${size.name}` });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (req, info) => app.app.fetch(req, { remoteAddr: info.remoteAddr }),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  let browser: Browser | null = null;
  try {
    browser = await launchBrowser();
    for (const size of SCREENS) {
      await t.step(size.name, async () => {
        const context = await browser!.newContext({
          viewport: { width: size.width, height: size.height },
        });
        const page = await context.newPage();
        await signIn(page, base, ADMIN_PASSWORD);
        const path = `/admin/projects/deskapp-${size.name}/feeds`;
        await page.goto(`${base}${path}#velopack`);
        const card = page.locator("#velopack");
        assert.equal(await page.inputValue("#velopack-deltas-kept"), "10");
        assert.equal(await sidewaysOverflow(page), 0);
        await card.screenshot({ path: `${SCREENSHOTS}/velopack-card-${size.name}.png` });

        await page.fill("#velopack-deltas-kept", "80");
        // The browser's own range check would stop the form: the server's is the one tested.
        await page.evaluate(`document.querySelector("#velopack form").noValidate = true`);
        await Promise.all([page.waitForLoadState("load"), card.locator("button").click()]);
        assert.match(await card.innerText(), /must be a whole number from 0 to 50/);
        await card.screenshot({ path: `${SCREENSHOTS}/velopack-card-error-${size.name}.png` });

        await page.fill("#velopack-deltas-kept", "3");
        await Promise.all([
          page.waitForURL(`${base}${path}#velopack`),
          page.locator("#velopack button").click(),
        ]);
        assert.equal(await page.inputValue("#velopack-deltas-kept"), "3");
        assert.match(
          await page.content(),
          /Server-made deltas and patches: each new release gets one from 3 older releases/,
        );
        await context.close();
      });
    }
  } finally {
    await browser?.close();
    await server.shutdown();
  }
});
