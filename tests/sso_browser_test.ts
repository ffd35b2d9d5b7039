/**
 * Sign-in through an OpenID Connect provider (docs/sso.md) in Chromium, against the service as
 * `deno task start` runs it and a real provider (tests/oidc_provider.ts): an admin, a viewer, a
 * user in no mapped group, a group removed while signed in, sign-out at the provider, and local
 * passwords off with the break-glass sign-in. The refusals of bad answers are in
 * tests/sso_test.ts. A provider that cannot be reached at start is a warning, not a stop.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { freePort } from "../bench/process.ts";
import { hasChromium, launchBrowser, screenshot } from "./browser.ts";
import {
  makeDataTempDir,
  SERVER_ADMIN_PASSWORD,
  type ServerProcess,
  startServer,
} from "./server_process.ts";
import { CLIENT_ID, CLIENT_SECRET, startTestProvider } from "./oidc_provider.ts";

function oidcEnv(issuer: string, port: number, extra: Record<string, string> = {}) {
  return {
    APP_PORT: String(port),
    APP_BASE_URL: `http://127.0.0.1:${port}`,
    APP_OIDC_ISSUER: issuer,
    APP_OIDC_CLIENT_ID: CLIENT_ID,
    APP_OIDC_CLIENT_SECRET: CLIENT_SECRET,
    APP_OIDC_SCOPES: "openid profile groups",
    APP_OIDC_ADMIN_GROUPS: "uds-admins",
    APP_OIDC_VIEWER_GROUPS: "uds-viewers",
    APP_OIDC_PROVIDER_NAME: "Test IdP",
    ...extra,
  };
}

/** Clicks the provider's button on the sign-in page and signs in there as `login`. */
async function signInThroughProvider(page: Page, base: string, login: string): Promise<void> {
  await page.goto(`${base}/admin/login`);
  await page.click("text=Sign in with Test IdP");
  await page.waitForSelector("input[name=login]");
  await page.fill("input[name=login]", login);
  await page.fill("input[name=password]", "any password");
  await Promise.all([page.waitForURL(`${base}/admin**`), page.click("button[type=submit]")]);
}

Deno.test({
  name: "signing in through an OpenID Connect provider in Chromium",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("sso-browser");
  const port = freePort();
  const offPort = freePort();
  const base = `http://127.0.0.1:${port}`;
  const offBase = `http://127.0.0.1:${offPort}`;
  await using provider = await startTestProvider([base, offBase]);
  provider.users.set("alice", ["uds-admins"]);
  provider.users.set("victor", ["uds-viewers"]);
  provider.users.set("nobody", ["staff"]);
  provider.users.set("carol", ["uds-admins"]);
  let server: ServerProcess | null = null;
  let browser: Browser | null = null;
  try {
    server = await startServer(
      `${dataDir}/on`,
      oidcEnv(provider.issuer, port, { APP_OIDC_CHECK_INTERVAL_SECONDS: "2" }),
    );
    browser = await launchBrowser();

    await t.step("a user in the admins' group signs in as admin", async () => {
      const page = await browser!.newPage();
      await signInThroughProvider(page, base, "alice");
      assert.equal(page.url(), `${base}/admin`);
      assert.match(await page.textContent("header") ?? "", /alice/);
      await page.goto(`${base}/admin/accounts`);
      assert.match(await page.textContent("main") ?? "", /alice/);
      await screenshot(page, "sso-admin");
      await page.close();
    });

    await t.step("a viewer signs in as viewer", async () => {
      const page = await browser!.newPage();
      await signInThroughProvider(page, base, "victor");
      assert.equal(page.url(), `${base}/admin`);
      const res = await page.goto(`${base}/admin/accounts`);
      assert.equal(res?.status(), 403);
      assert.match(await page.textContent("main") ?? "", /Your account is a viewer/);
      await page.close();
    });

    await t.step("a user in no mapped group gets a page that says why", async () => {
      const page = await browser!.newPage();
      await signInThroughProvider(page, base, "nobody");
      const text = await page.textContent("main") ?? "";
      assert.match(text, /You cannot sign in here/);
      assert.match(text, /"nobody" at Test IdP is in no group that gives a role here/);
      assert.doesNotMatch(text, /APP_OIDC/);
      await screenshot(page, "sso-refused");
      const res = await page.goto(`${base}/admin`);
      assert.equal(page.url(), `${base}/admin/login`, String(res?.status()));
      await page.close();
    });

    await t.step(
      "after a refusal, signing out at the provider lets another person in",
      async () => {
        const page = await browser!.newPage();
        await signInThroughProvider(page, base, "nobody");
        // Signing in again straight away comes back to the refusal: the provider's session is open.
        await page.goto(`${base}/admin/login`);
        await Promise.all([
          page.waitForURL(`${base}/admin/login/sso/callback**`),
          page.click("text=Sign in with Test IdP"),
        ]);
        assert.match(await page.textContent("h1") ?? "", /You cannot sign in here/);
        await page.click("[data-provider-sign-out]");
        await page.waitForURL(`${provider.issuer}/**`, { waitUntil: "commit" });
        await Promise.all([
          page.waitForURL(`${base}/admin/login`, { waitUntil: "domcontentloaded" }),
          page.click("button[name=logout][value=yes]"),
        ]);
        await page.click("text=Sign in with Test IdP");
        await page.waitForSelector("input[name=login]");
        await page.fill("input[name=login]", "alice");
        await page.fill("input[name=password]", "any password");
        await Promise.all([page.waitForURL(`${base}/admin`), page.click("button[type=submit]")]);
        assert.match(await page.textContent("header") ?? "", /alice/);
        await page.close();
      },
    );

    await t.step(
      "a group removed at the provider ends the session after the interval",
      async () => {
        const page = await browser!.newPage();
        await signInThroughProvider(page, base, "carol");
        assert.equal(page.url(), `${base}/admin`);
        provider.users.set("carol", []);
        await new Promise((resolve) => setTimeout(resolve, 2_200));
        await page.goto(`${base}/admin/projects`);
        assert.equal(page.url(), `${base}/admin/login`);
        assert.match(await page.textContent("main") ?? "", /You were signed out: .*no group/);
        await page.close();
      },
    );

    await t.step("sign-out ends the session here and at the provider", async () => {
      const page = await browser!.newPage();
      await signInThroughProvider(page, base, "alice");
      await page.click("form[action='/admin/logout'] button");
      // The provider asks whether to sign out there too.
      // (Its page loads a web font, which this machine cannot reach: no waiting for "load".)
      await page.waitForURL(`${provider.issuer}/**`, { waitUntil: "commit" });
      await Promise.all([
        page.waitForURL(`${base}/admin/login`, { waitUntil: "domcontentloaded" }),
        page.click("button[name=logout][value=yes]"),
      ]);
      assert.match(await page.textContent("main") ?? "", /You are signed out/);
      await page.goto(`${base}/admin`);
      assert.equal(page.url(), `${base}/admin/login`);
      // Signed out at the provider as well: it asks for the login again.
      await page.click("text=Sign in with Test IdP");
      await page.waitForSelector("input[name=login]");
      await page.close();
    });

    await t.step("local passwords off: no password form; break-glass signs in", async () => {
      await using off = await startServer(
        `${dataDir}/off`,
        oidcEnv(provider.issuer, offPort, { APP_OIDC_LOCAL_PASSWORDS: "false" }),
      );
      const page = await browser!.newPage();
      await page.goto(`${off.baseUrl}/admin/login`);
      assert.equal(await page.locator("#password").count(), 0);
      assert.equal(await page.locator("text=Sign in with Test IdP").count(), 1);
      await screenshot(page, "sso-passwords-off");
      await page.goto(`${off.baseUrl}/admin/login?break-glass`);
      await page.fill("#username", "admin");
      await page.fill("#password", SERVER_ADMIN_PASSWORD);
      await Promise.all([
        page.waitForURL(`${off.baseUrl}/admin`),
        page.click("form[action='/admin/login'] button[type=submit]"),
      ]);
      assert.match(await page.textContent("header") ?? "", /admin/);
      await page.close();
    });
  } finally {
    await browser?.close();
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test({
  name: "a provider that cannot be reached at start is a warning, and the service starts",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dataDir = await makeDataTempDir("sso-unreachable");
  const port = freePort();
  try {
    await using server = await startServer(
      dataDir,
      oidcEnv(`http://127.0.0.1:${freePort()}`, port),
    );
    const deadline = Date.now() + 10_000;
    while (!/not reachable at start/.test(server.output()) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.match(server.output(), /not reachable at start .*trying again in 5 s/);
    const res = await fetch(`${server.baseUrl}/admin/login`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /Sign in with Test IdP/);
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
