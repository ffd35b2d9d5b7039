/**
 * In Chromium at 1366×900 and 390×844, with realistic data (tests/attention_fixtures.ts): the
 * dashboard's "Needs attention" list in the first screen (measured), the header on one line at
 * 1366 px naming the account and its role, a viewer's pages without controls it cannot use, the
 * sign-in page's "or" between the provider and the password, the refusal and unreachable-provider
 * pages, and the webhook pages (failing marked, test ping, a delivery's body and answer, editing).
 * Screenshots go to tests/screenshots/attention-*.png.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { freePort } from "../bench/process.ts";
import { hasChromium, launchBrowser, SCREENS, screenshot } from "./browser.ts";
import { ADMIN_PASSWORD, createAdminTestApp } from "./admin_helpers.ts";
import { seedAttention, startFailingReceiver } from "./attention_fixtures.ts";
import { oidcSettings, startTestProvider } from "./oidc_provider.ts";
import type { TestApp } from "./helpers.ts";
import { createAdminAccount } from "../src/accounts/admin_users.ts";
import { hashPassword } from "../src/lib/passwords.ts";
import { createSso } from "../src/sso/mod.ts";

const VIEWER = "victoria.viewer@example.com";
const PASSWORD = "a long enough password";

/** The app with sign-in through `issuer`'s provider, served at `port`. */
async function servedApp(port: number, issuer: string): Promise<{ app: TestApp; base: string }> {
  const base = `http://127.0.0.1:${port}`;
  const app = await createAdminTestApp({
    baseUrl: base,
    webhooksAllowPrivate: true,
    ...oidcSettings({ issuer }),
  }, {
    sso: (store, config) =>
      createSso({
        store,
        settings: config.oidc!,
        redirectUri: `${base}/admin/login/sso/callback`,
      }),
  });
  return { app, base };
}

async function signInWithPassword(page: Page, base: string, username: string, password: string) {
  await page.goto(`${base}/admin/login`);
  await page.fill("#username", username);
  await page.fill("#password", password);
  await Promise.all([
    page.waitForURL(`${base}/admin`),
    page.click("form[action='/admin/login'] button[type=submit]"),
  ]);
}

/** Boxes of the elements `selector` matches, in page coordinates. */
function boxes(page: Page, selector: string) {
  return page.evaluate<Array<{ top: number; bottom: number; left: number; right: number }>>(
    `[...document.querySelectorAll(${JSON.stringify(selector)})].map((el) => {
      const box = el.getBoundingClientRect();
      return { top: box.top + scrollY, bottom: box.bottom + scrollY, left: box.left,
        right: box.right };
    })`,
  );
}

Deno.test({
  name: "dashboard attention, roles, sign-in and webhooks at 390 and 1366 px",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const port = freePort();
  await using provider = await startTestProvider([`http://127.0.0.1:${port}`]);
  provider.users.set("nobody", ["staff", "contractors"]);
  const { app, base } = await servedApp(port, provider.issuer);
  const receiver = startFailingReceiver();
  const server = Deno.serve({ port, hostname: "127.0.0.1", onListen() {} }, app.app.fetch);
  // A second service whose provider cannot be reached.
  const downPort = freePort();
  const down = await servedApp(downPort, `http://127.0.0.1:${freePort()}`);
  const downServer = Deno.serve(
    { port: downPort, hostname: "127.0.0.1", onListen() {} },
    down.app.app.fetch,
  );
  let browser: Browser | null = null;
  try {
    // A long receiver URL: the longest subject a line gets.
    const webhookUrl = `${receiver.url}/${"release-events-".repeat(10)}acme`;
    const seeded = await seedAttention(app, { webhookUrl });
    await createAdminAccount(app.store, {
      username: VIEWER,
      passwordHash: await hashPassword(PASSWORD),
      role: "viewer",
    });
    const endpointPage = `${base}/admin/webhooks/${seeded.endpoint.id}`;
    browser = await launchBrowser();

    for (const size of SCREENS) {
      const name = (what: string) => `attention-${what}-${size.name}`;
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
      });
      const page = await context.newPage();

      await t.step(`${size.name}: sign-in: the provider, "or", then the password`, async () => {
        await page.goto(`${base}/admin/login`);
        const [button] = await boxes(page, "[data-sso-sign-in]");
        const [or] = await boxes(page, "[data-sign-in-or]");
        const [form] = await boxes(page, "form[action='/admin/login']");
        assert.ok(button.bottom <= or.top && or.bottom <= form.top, "in that order");
        assert.equal((await page.textContent("[data-sign-in-or]"))?.trim(), "or with a password");
        const classes = await page.getAttribute("form[action='/admin/login'] button", "class");
        assert.doesNotMatch(classes ?? "", /button-primary/, "one primary button: the provider's");
        await screenshot(page, name("sign-in"));
      });

      await t.step(
        `${size.name}: a refusal says what to do, and signs out there first`,
        async () => {
          await page.click("text=Sign in with Test IdP");
          await page.waitForSelector("input[name=login]");
          await page.fill("input[name=login]", "nobody");
          await page.fill("input[name=password]", "any password");
          await Promise.all([
            page.waitForURL(`${base}/admin/**`),
            page.click("button[type=submit]"),
          ]);
          assert.equal(await page.textContent("h1"), "You cannot sign in here");
          const text = await page.textContent("main") ?? "";
          assert.match(text, /your groups \(staff, contractors\) are none of them/);
          assert.doesNotMatch(text, /APP_OIDC|JWT|signature|state/);
          const signOut = await page.getAttribute("[data-provider-sign-out]", "href");
          assert.ok(signOut?.startsWith(`${provider.issuer}/session/end?`), signOut ?? "");
          await screenshot(page, name("sso-refused"));
          // Signed out at the provider, so the next person is asked who they are.
          await page.click("[data-provider-sign-out]");
          await page.waitForURL(`${provider.issuer}/**`, { waitUntil: "commit" });
          await Promise.all([
            page.waitForURL(`${base}/admin/login`, { waitUntil: "domcontentloaded" }),
            page.click("button[name=logout][value=yes]"),
          ]);
        },
      );

      await t.step(`${size.name}: an unreachable provider is named so`, async () => {
        const res = await page.goto(`http://127.0.0.1:${downPort}/admin/login/sso`);
        assert.equal(res?.status(), 502);
        assert.equal(await page.textContent("h1"), "Test IdP cannot be reached");
        assert.equal(await page.textContent("[data-sso-again]"), "Try again");
        assert.match(await page.textContent("main") ?? "", /Sign in with a password/);
        await screenshot(page, name("sso-unreachable"));
      });

      await t.step(`${size.name}: the webhook's test ping fails and says why`, async () => {
        await signInWithPassword(page, base, "admin", ADMIN_PASSWORD);
        await page.goto(endpointPage);
        await Promise.all([
          page.waitForURL(/\/deliveries\/[0-9a-z]+$/),
          page.click("#webhook-state button[type=submit]"),
        ]);
        assert.match(
          await page.textContent("#flash") ?? "",
          /The test ping failed: the receiver answered 500/,
        );
        assert.match(await page.textContent("[data-delivery-body]") ?? "", /"webhook\.test"/);
        assert.match(
          await page.textContent("[data-delivery-answer-body]") ?? "",
          /database is locked/,
        );
        await screenshot(page, name("webhook-delivery"));
        await page.goto(`${base}/admin/webhooks`);
        assert.equal(
          await page.textContent(`tr[data-webhook-id='${seeded.endpoint.id}'] .badge`),
          "failing",
        );
        await screenshot(page, name("webhooks"));
      });

      await t.step(
        `${size.name}: the dashboard's attention list is in the first screen`,
        async () => {
          await page.goto(`${base}/admin`);
          const kinds = await page.evaluate<string[]>(
            `[...document.querySelectorAll("[data-attention]")].map((li) => li.dataset.attention)`,
          );
          assert.deepEqual(kinds, [
            "halted",
            "rolled-back",
            "webhook",
            "signing",
            "gated",
            "key",
            "token",
          ]);
          const [list] = await boxes(page, "#attention");
          console.log(
            `  ${size.name}: attention list ${Math.round(list.top)}–${Math.round(list.bottom)} px`,
          );
          assert.ok(list.top < 250, `it starts at ${list.top} px`);
          assert.ok(list.bottom <= size.height, `it ends at ${list.bottom} px`);
          // Each line is one line of text at 1366 px (badge, subject and reason side by side).
          if (size.width > 1000) {
            for (const item of await boxes(page, ".attention-item")) {
              assert.ok(item.bottom - item.top < 48, `a line ${item.bottom - item.top} px high`);
            }
          }
          await screenshot(page, name("dashboard"));
        },
      );

      await t.step(`${size.name}: the header is one line and names account and role`, async () => {
        const [header] = await boxes(page, ".site-header");
        const role = await page.textContent("[data-role]");
        assert.equal(role?.trim(), "admin");
        assert.ok(await page.isVisible("[data-role]"));
        if (size.width > 1000) {
          assert.ok(header.bottom - header.top < 64, `the header is ${header.bottom} px high`);
          const tops = new Set(
            (await boxes(page, ".main-nav a, .user-menu a, .user-menu button, .brand"))
              .map((box) => Math.round((box.top + box.bottom) / 2)),
          );
          assert.ok(
            [...tops].every((y) => Math.abs(y - [...tops][0]) <= 2),
            `one line: ${[...tops]}`,
          );
        }
      });

      await t.step(`${size.name}: a viewer sees no control it cannot use`, async () => {
        await page.click("form[action='/admin/logout'] button");
        await page.waitForURL(`${base}/admin/login`);
        await signInWithPassword(page, base, VIEWER, PASSWORD);
        assert.equal((await page.textContent("[data-role]"))?.trim(), "viewer");
        assert.equal(await page.getAttribute("[data-signed-in]", "data-signed-in"), VIEWER);
        const main = await page.textContent("main") ?? "";
        for (const text of ["New project", "Upload a release", "New API key"]) {
          assert.ok(!main.includes(text), `no "${text}"`);
        }
        await screenshot(page, name("viewer-dashboard"));
        for (
          const path of [
            "/admin/projects/acme-desktop",
            "/admin/projects/acme-desktop/releases",
            "/admin/projects/acme-desktop/rollout",
            "/admin/projects/acme-desktop/settings",
            "/admin/api-keys",
            "/admin/projects",
          ]
        ) {
          await page.goto(`${base}${path}`);
          const forms = await page.evaluate<string[]>(
            `[...document.querySelectorAll("main form[method=post]")].map((f) => f.action)`,
          );
          assert.deepEqual(forms, [], path);
        }
        await page.goto(`${base}/admin/projects/acme-desktop`);
        await screenshot(page, name("viewer-project"));
        await page.click("form[action='/admin/logout'] button");
      });

      await context.close();
    }
  } finally {
    await browser?.close();
    await server.shutdown();
    await downServer.shutdown();
    await receiver.close();
    await app.close();
    await down.app.close();
  }
});
