/**
 * The whole admin flow in a real browser (Debian's Chromium through
 * playwright-core) against a real server started with `deno task start`:
 * sign in, create a project with tags, upload a release and watch the
 * progress bar finish, create a key and read it from the page, then use the
 * key on the client API and check the downloaded artifact's checksum.
 * Screenshots of the main pages land in tests/screenshots/flow-*.png (git-ignored); every page
 * at both screen sizes is in admin_ui_browser_test.ts.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { randomBytes } from "./admin_helpers.ts";
import { hasChromium, launchBrowser, screenshot, sidewaysOverflow } from "./browser.ts";
import { makeDataTempDir, startServer } from "./server_process.ts";
import { sha256 } from "./helpers.ts";

const PASSWORD = "browser test password 1";
/** The public address the server is told (APP_BASE_URL); the browser talks to the real port. */
const PUBLIC_BASE_URL = "http://updates.test:8080";

Deno.test({
  name: "admin UI in a real browser: sign in, project, upload, key, client download",
  ignore: !hasChromium,
  // Playwright keeps a pipe to the browser process between steps.
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("browser-test");
  const server = await startServer(dataDir, {
    APP_ADMIN_USERNAME: "admin",
    APP_ADMIN_PASSWORD: PASSWORD,
    APP_BASE_URL: PUBLIC_BASE_URL,
  });
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], {
    origin: server.baseUrl,
  });
  const page = await context.newPage();
  const base = server.baseUrl;
  const artifact = randomBytes(6 * 1024 * 1024);
  const artifactName = "Desktop Setup 1.2.3.exe";
  let apiKey = "";

  try {
    await t.step("an anonymous visit lands on the sign-in page", async () => {
      await page.goto(`${base}/admin`);
      assert.equal(new URL(page.url()).pathname, "/admin/login");
      await screenshot(page, "flow-login");
    });

    await t.step("a wrong password shows the error", async () => {
      await page.fill("#username", "admin");
      await page.fill("#password", "not the password");
      await page.click("button[type=submit]");
      await page.waitForSelector("[data-form-error]");
      assert.match(
        await page.textContent("[data-form-error]") ?? "",
        /invalid username or password/,
      );
    });

    await t.step("sign in (a real browser's same-origin POST passes the CSRF checks)", async () => {
      await page.fill("#username", "admin");
      await page.fill("#password", PASSWORD);
      await Promise.all([page.waitForURL(`${base}/admin`), page.click("button[type=submit]")]);
      assert.equal(await page.textContent("h1"), "Dashboard");
    });

    await t.step("create a project with tags", async () => {
      await page.goto(`${base}/admin/projects`);
      assert.equal(await page.getAttribute("#new-project", "open"), "", "open: no projects yet");
      await page.fill("#project-name", "Desktop App");
      await page.fill("#project-slug", "desktop");
      await page.fill("#project-description", "The desktop client for Windows and macOS.");
      await page.fill("#project-tags", "Desktop, stable");
      await Promise.all([
        page.waitForURL(`${base}/admin/projects/desktop`),
        page.click("#new-project button[type=submit]"),
      ]);
      assert.match(await page.textContent(".flash-success") ?? "", /was created/);
      const tags = await page.$$eval(".tag-list .tag", (nodes) => nodes.map((n) => n.textContent));
      assert.deepEqual(tags, ["desktop", "stable"]);
    });

    await t.step("upload a release and watch the progress bar finish", async () => {
      // The upload form is on the project's Releases page (folded on its overview).
      await page.goto(`${base}/admin/projects/desktop/releases`);
      // Slow the upload down so the bar has something to show.
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.enable");
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: 4 * 1024 * 1024,
      });
      // Record every percentage the status line shows.
      await page.evaluate(`(() => {
        const status = document.querySelector("[data-upload-status]");
        globalThis.progressSeen = [];
        new MutationObserver(() => globalThis.progressSeen.push(Number(status.dataset.percent)))
          .observe(status, { attributes: true, childList: true, characterData: true });
      })()`);
      assert.equal(await page.isVisible("[data-upload-cancel]"), false);
      await page.fill("#release-version", "1.2.3");
      await page.fill("#release-build", "42");
      await page.fill("#release-notes", "First release.\nWith two lines.");
      await page.setInputFiles("#release-file", {
        name: artifactName,
        mimeType: "application/x-msdownload",
        buffer: Buffer.from(artifact),
      });
      await page.click("[data-upload-submit]");
      await page.waitForSelector("[data-upload-progress]:not([hidden])");
      await page.waitForSelector("form[data-upload-state=uploading]");
      await screenshot(page, "flow-upload-progress");
      await page.waitForSelector("form[data-upload-state=done]", { timeout: 60_000 });
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: -1,
      });
      const seen = await page.evaluate<number[]>("globalThis.progressSeen");
      assert.ok(seen.some((p) => p > 0 && p < 100), `intermediate progress: ${seen}`);
      const bar = await page.evaluate<{ value: number; max: number }>(`(() => {
        const bar = document.querySelector("[data-upload-progress] progress");
        return { value: bar.value, max: bar.max };
      })()`);
      assert.equal(bar.value, bar.max);
      assert.equal(await page.isVisible("[data-upload-cancel]"), false);
      assert.match(await page.textContent("[data-upload-status]") ?? "", /100% · Upload complete/);
      // The new release is on the page without a reload, with the right checksum.
      const row = page.locator("#releases tr[data-release-id]").first();
      await row.waitFor();
      assert.match(await row.textContent() ?? "", /1\.2\.3/);
      assert.match(await row.textContent() ?? "", /6\.0 MiB/);
      assert.equal(await row.locator("code.hash").textContent(), sha256(artifact));
      await screenshot(page, "flow-project");
    });

    await t.step("create a key for the project and read it from the page", async () => {
      await page.goto(`${base}/admin/api-keys`);
      assert.equal(await page.getAttribute("#new-key", "open"), "", "open: no keys yet");
      // The scope editor shows the project field only for project modes.
      assert.equal(await page.isVisible("#key-project-slugs"), false);
      await page.check("#scope-project_allow_list");
      assert.equal(await page.isVisible("#key-project-slugs"), true);
      assert.equal(await page.isVisible("#key-other-tags"), false);
      await page.fill("#key-name", "Desktop updater");
      await page.fill("#key-project-slugs", "desktop");
      await screenshot(page, "flow-api-keys-form");
      await Promise.all([
        page.waitForSelector("[data-api-key]"),
        page.click("#new-key button[type=submit]"),
      ]);
      apiKey = await page.getAttribute("[data-api-key]", "data-api-key") ?? "";
      assert.match(apiKey, /^uds_/);
      assert.match(await page.getAttribute("[data-api-key]", "data-api-key-id") ?? "", /^\d+$/);
      // After the scripts ran the key is still in one element only: its attribute and its text.
      const copies = () => page.content().then((html) => html.split(apiKey).length - 1);
      assert.equal(await copies(), 2);
      assert.equal(await page.locator(`[data-api-key="${apiKey}"][data-api-key-id]`).count(), 1);
      assert.equal((await page.textContent("#new-api-key"))?.trim(), apiKey);
      const example = await page.textContent("#curl-example") ?? "";
      assert.match(example, /Bearer \$UDS_API_KEY"/);
      assert.ok(!example.includes(apiKey));
      await page.click("button[data-copy-key]");
      await page.waitForSelector("button[data-copy-key]:text('Copied')");
      assert.equal(await page.evaluate<string>("navigator.clipboard.readText()"), apiKey);
      await page.click("button[data-copy-command]");
      await page.waitForSelector("button[data-copy-command]:text('Copied')");
      assert.equal(
        await page.evaluate<string>("navigator.clipboard.readText()"),
        `curl -fsS -H "Authorization: Bearer ${apiKey}" \\\n` +
          `  ${PUBLIC_BASE_URL}/api/v1/projects/desktop/releases/latest`,
      );
      assert.equal(await copies(), 2, "copying adds no copy");
      await screenshot(page, "flow-api-key-created");
    });

    await t.step(
      "the key works on the client API; the download has the right checksum",
      async () => {
        const auth = { authorization: `Bearer ${apiKey}` };
        const latest = await fetch(`${base}/api/v1/projects/desktop/releases/latest`, {
          headers: auth,
        });
        assert.equal(latest.status, 200);
        const { release } = await latest.json();
        assert.equal(release.version, "1.2.3");
        assert.equal(release.build, "42");
        assert.equal(release.filename, artifactName);
        assert.equal(release.content_type, "application/x-msdownload");
        assert.equal(release.size_bytes, artifact.length);
        assert.equal(release.checksum_sha256, sha256(artifact));
        const download = await fetch(`${base}${release.download_url}`, { headers: auth });
        assert.equal(download.status, 200);
        const bytes = new Uint8Array(await download.arrayBuffer());
        assert.equal(sha256(bytes), release.checksum_sha256);
      },
    );

    await t.step("key list, dashboard and audit log", async () => {
      await page.goto(`${base}/admin/api-keys`);
      assert.equal(await page.locator("tr[data-api-key-id]").count(), 1);
      assert.ok(!(await page.content()).includes(apiKey), "the key is never shown again");
      await screenshot(page, "flow-api-keys");
      await page.goto(`${base}/admin/projects`);
      await screenshot(page, "flow-projects");
      await page.goto(`${base}/admin`);
      assert.equal(await page.textContent("[data-count=releases]"), "1");
      await screenshot(page, "flow-dashboard");
      await page.goto(`${base}/admin/audit`);
      const actions = await page.$$eval(
        "tr[data-audit-action]",
        (rows) => rows.map((row) => row.getAttribute("data-audit-action")),
      );
      for (const action of ["auth.sign_in", "project.create", "release.upload", "api_key.create"]) {
        assert.ok(actions.includes(action), action);
      }
      await screenshot(page, "flow-audit");
    });

    await t.step("no log line shows the key", () => {
      assert.ok(apiKey.length > 0);
      assert.ok(!server.output().includes(apiKey));
    });

    await t.step("on a phone-sized screen the pages still work", async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${base}/admin/projects/desktop`);
      const overflow = await sidewaysOverflow(page);
      assert.ok(overflow <= 0, `no sideways scrolling (${overflow}px)`);
      await screenshot(page, "flow-project-phone");
      await page.goto(`${base}/admin/api-keys`);
      await screenshot(page, "flow-api-keys-phone");
      await page.setViewportSize({ width: 1366, height: 900 });
    });

    await t.step("sign out ends the session", async () => {
      await page.goto(`${base}/admin`);
      await Promise.all([
        page.waitForURL(`${base}/admin/login`),
        page.click(".user-menu button[type=submit]"),
      ]);
      await page.goto(`${base}/admin`);
      assert.equal(new URL(page.url()).pathname, "/admin/login");
    });
  } catch (error) {
    console.error(`server output:\n${server.output()}`);
    throw error;
  } finally {
    await browser.close();
    await server.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
