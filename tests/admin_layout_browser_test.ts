/**
 * Every admin page with long data, in Chromium at 1366×900 and 390×844: no
 * page scrolls sideways, no element scrolls or spills its text sideways, no
 * control or text leaves its table cell or the screen, no word breaks inside
 * (WORD_SPLITS) and the header takes one line at 1366 px. The data is made
 * through the admin forms: a 120-character project name, a 64-character slug
 * and user name, 40-character tags, a 150-character file name, a 28-character
 * version in parts, 100-character key and token names, a 200-character
 * webhook URL and 64-character hashes; the release safety card's gates,
 * minimum version and 200-character failure reasons. A screenshot of each
 * page goes to tests/screenshots/layout-*.png.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Browser, Page } from "playwright-core";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import { hasChromium, launchBrowser, SCREENS, screenshot, signIn } from "./browser.ts";
import {
  makeDataTempDir,
  PROJECT_ROOT,
  SERVER_ADMIN_PASSWORD,
  type ServerProcess,
  startServer,
} from "./server_process.ts";

/** Long words without spaces: the worst case for a layout (nothing to break at). */
const NAME = "Name".repeat(30); // 120 characters
const SLUG = "s".repeat(60) + "-app"; // 64 characters
const TAGS = ["t".repeat(39) + "1", "t".repeat(39) + "2"];
const FILE_NAME = "f".repeat(146) + ".bin"; // 150 characters
const KEY_NAME = "K".repeat(100);
const TOKEN_NAME = "T".repeat(100);
const WEBHOOK_URL = "https://hooks.example.com/" + "w".repeat(174); // 200 characters
const USERNAME = "u".repeat(64);
/** A plain version and one with parts (which may wrap only between them). */
const VERSIONS = ["1.0.0", "2.0.0-beta.12+build.20260301"];

/** The GET routes that are no page (JSON or a file download). */
const NOT_PAGES = new Set(["/admin/project-slugs", "/admin/releases/:id/download"]);

/** Every GET route under /admin/routes/, as written there (with `/admin` in front). */
async function adminPageRoutes(): Promise<string[]> {
  const patterns = new Set<string>();
  for await (const entry of Deno.readDir(`${PROJECT_ROOT}admin/routes`)) {
    const text = await Deno.readTextFile(`${PROJECT_ROOT}admin/routes/${entry.name}`);
    for (const match of text.matchAll(/admin\.get\(\s*"([^"]+)"/g)) {
      const pattern = match[1] === "/" ? "/admin" : `/admin${match[1]}`;
      if (!NOT_PAGES.has(pattern)) patterns.add(pattern);
    }
  }
  return [...patterns].sort();
}

interface Seeded {
  keyId: string;
  releaseId: string;
  webhookId: string;
}

function check(res: Response, what: string, status = 303): void {
  assert.equal(res.status, status, `${what}: HTTP ${res.status}`);
}

/** Makes the long data through the admin forms, as an admin would. */
async function seed(base: string): Promise<Seeded> {
  const admin = new AdminClient(httpSender([base]));
  check(await admin.signIn("admin", SERVER_ADMIN_PASSWORD), "sign-in");
  await admin.page("/admin/webhooks");
  const hook = await admin.post("/admin/webhooks", {
    url: WEBHOOK_URL,
    events: ["release.published", "key.created", "rollout.changed"],
  });
  check(hook, "webhook", 200);
  await hook.body?.cancel();
  await admin.page("/admin/projects");
  check(
    await admin.post("/admin/projects", {
      name: NAME,
      slug: SLUG,
      description: "D".repeat(400),
      tags: TAGS.join(", "),
    }),
    "project",
  );
  await admin.page(`/admin/projects/${SLUG}`);
  for (const version of VERSIONS) {
    const res = await admin.upload(`/admin/projects/${SLUG}/releases`, [
      ["csrf_token", admin.csrfToken],
      ["version", version],
      ["build", "b".repeat(60)],
      ["release_notes", "N".repeat(300)],
      ["file", new File([`bytes of ${version}`], FILE_NAME)],
    ]);
    assert.ok(res.status < 400, `upload ${version}: HTTP ${res.status}`);
    await res.body?.cancel();
  }
  const { html } = await admin.page(`/admin/projects/${SLUG}/rollout`);
  const candidate = /id="rollout-release"[^>]*>\s*<option value="(\d+)"/.exec(html)?.[1];
  assert.ok(candidate, "a release to roll out");
  check(
    await admin.post(`/admin/projects/${SLUG}/rollout`, {
      release_id: candidate,
      percentage: "10",
      schedule: "2026-12-01T09:00:00.000Z=50, 2026-12-02T09:00:00.000Z=100",
      tester_tag: TAGS[0],
    }),
    "rollout",
  );
  await admin.page("/admin/api-keys");
  const key = await admin.post("/admin/api-keys", {
    name: KEY_NAME,
    can_download: "on",
    scope_mode: "tag_allow_list",
    tags: TAGS.join(", "),
  });
  check(key, "api key", 200);
  const secret = /data-api-key="([^"]+)"/.exec(await key.text())?.[1];
  assert.ok(secret, "the api key's secret");
  await seedReleaseSafety(admin, { base, secret });
  await admin.page("/admin/publish-tokens");
  const token = await admin.post("/admin/publish-tokens", {
    name: TOKEN_NAME,
    project_slugs: SLUG,
    can_upload: "on",
    can_change_state: "on",
  });
  check(token, "publish token", 200);
  await token.body?.cancel();
  await admin.page("/admin/accounts");
  check(
    await admin.post("/admin/accounts", {
      username: USERNAME,
      password: "a long enough password 42",
      role: "viewer",
    }),
    "account",
  );
  await admin.page("/admin/signing-keys");
  check(await admin.post("/admin/signing-keys"), "signing key");

  const keys = (await admin.page("/admin/api-keys")).html;
  const hooks = (await admin.page("/admin/webhooks")).html;
  const releases = (await admin.page(`/admin/projects/${SLUG}`)).html;
  const keyId = /data-api-key-id="(\d+)"/.exec(keys)?.[1];
  const webhookId = /data-webhook-id="([0-9a-z]+)"/.exec(hooks)?.[1];
  const releaseId = /data-release-id="(\d+)"/.exec(releases)?.[1];
  assert.ok(keyId && webhookId && releaseId, "the ids of the seeded records");
  return { keyId, releaseId, webhookId };
}

/**
 * The release safety card with long data: gates, a 100-character minimum
 * version, every release critical, and installs and crashes with 200-character
 * reasons reported for both releases.
 */
async function seedReleaseSafety(
  admin: AdminClient,
  { base, secret }: { base: string; secret: string },
): Promise<void> {
  await admin.page(`/admin/projects/${SLUG}`);
  check(
    await admin.post(`/admin/projects/${SLUG}/rollout/gates`, {
      stages: "10, 25, 50, 75, 100",
      min_installs: "1000000",
      min_hours: "168",
      advance_below: "2.5",
      halt_at: "7.25",
    }),
    "gates",
  );
  const { html } = await admin.page(`/admin/projects/${SLUG}/rollout`);
  const critical = [...html.matchAll(/name="critical" value="(\d+)"/g)].map((m) => m[1]);
  check(
    await admin.post(`/admin/projects/${SLUG}/rollout/policy`, {
      minimum_version: "9".repeat(100),
      critical,
    }),
    "policy",
  );
  // Installs report the version they were offered (docs/reports.md "What the gates trust").
  const offered = new Map<string, string[]>(VERSIONS.map((version) => [version, []]));
  for (let n = 0; [...offered.values()].some((ids) => ids.length < 6); n++) {
    assert.ok(n < 2_000, "installs offered each version");
    const installId = `install-${n}`;
    const res = await fetch(`${base}/api/v1/projects/${SLUG}/releases/latest`, {
      headers: { authorization: `Bearer ${secret}`, "x-install-id": installId },
    });
    assert.equal(res.status, 200);
    offered.get((await res.json()).release.version)?.push(installId);
  }
  // The answers' sightings are written within a second.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  for (const version of VERSIONS) {
    for (const [i, installId] of offered.get(version)!.slice(0, 6).entries()) {
      const res = await fetch(`${base}/reports/v1/projects/${SLUG}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${secret}`,
          "content-type": "application/json",
          "x-install-id": installId,
        },
        body: JSON.stringify(
          i < 2
            ? { event: "crashed", version, reason: "R".repeat(200) }
            : { event: "installed", version },
        ),
      });
      assert.ok(res.status < 300, `report: HTTP ${res.status}`);
      await res.body?.cancel();
    }
  }
}

/**
 * What overflows on the page, as sentences (empty when nothing does): the page
 * scrolling sideways, an element scrolling or spilling its content sideways,
 * or a visible element leaving its table cell or the screen. Visually hidden
 * elements (clipped) and what they hold are not looked at.
 */
const OVERFLOWS = `(() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth) {
    problems.push("the page scrolls sideways: " + root.scrollWidth + " px wide for " + root.clientWidth);
  }
  const describe = (el) => {
    const id = el.id ? "#" + el.id : "";
    const cls = typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\\s+/).join(".") : "";
    const text = String(el.textContent || el.value || "").trim().slice(0, 40);
    return el.tagName.toLowerCase() + id + cls + (text ? ' "' + text + '"' : "");
  };
  const hidden = new Map();
  const isHidden = (el) => {
    if (!el || el === root) return false;
    if (hidden.has(el)) return hidden.get(el);
    const style = getComputedStyle(el);
    const result = style.clip !== "auto" || el.classList.contains("skip-link") ||
      isHidden(el.parentElement);
    hidden.set(el, result);
    return result;
  };
  const width = root.clientWidth;
  for (const el of document.body.querySelectorAll("*")) {
    if (isHidden(el)) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    const style = getComputedStyle(el);
    const clips = style.overflowX !== "visible";
    const control = /^(INPUT|SELECT|TEXTAREA|svg)$/.test(el.tagName);
    if (!control && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 &&
        !(clips && style.overflowX !== "auto" && style.overflowX !== "scroll")) {
      problems.push(describe(el) + (clips ? " scrolls" : " spills") + " sideways: " +
        el.scrollWidth + " px of content in " + el.clientWidth);
    }
    if (box.left < -1 || box.right > width + 1) {
      problems.push(describe(el) + " leaves the screen: " + Math.round(box.left) + " to " + Math.round(box.right));
    }
    const cell = el.parentElement && el.parentElement.closest("td, th");
    if (cell) {
      const outer = cell.getBoundingClientRect();
      if (box.left < outer.left - 1 || box.right > outer.right + 1) {
        problems.push(describe(el) + " leaves its cell: " + Math.round(box.left) + " to " +
          Math.round(box.right) + " in " + Math.round(outer.left) + " to " + Math.round(outer.right));
      }
    }
  }
  return [...new Set(problems)].slice(0, 12);
})()`;

/** Words of this many characters or more are data (a hash, a key, a long name): they may break anywhere. */
const DATA_WORD_LENGTH = 32;

/**
 * Words broken inside across two lines, as sentences (empty when none is):
 * every word of every visible text node is measured with a Range
 * (getClientRects: one box per line it takes). A word that would fit its box
 * on a line of its own never breaks inside, except a slug, file name or URL
 * (a word with letters) at its own separators (\`/ - _ . @ : ? & = + ,\`); so
 * a number, percentage, date or time never breaks. Its box is the nearest
 * block around it, or for a word in a table the block around the table, so
 * a column squeezed below its words counts. A word wider than its box, or of
 * DATA_WORD_LENGTH characters or more, may break anywhere. The header must
 * take one line from 721 px up.
 */
const WORD_SPLITS = `(() => {
  const problems = [];
  const root = document.documentElement;
  const hidden = new Map();
  const isHidden = (el) => {
    if (!el || el === root) return false;
    if (hidden.has(el)) return hidden.get(el);
    const style = getComputedStyle(el);
    const result = style.clip !== "auto" || style.display === "none" ||
      el.classList.contains("skip-link") || isHidden(el.parentElement);
    hidden.set(el, result);
    return result;
  };
  const lines = (range) => {
    const tops = [];
    for (const rect of range.getClientRects()) {
      if (rect.width < 0.5 || rect.height < 0.5) continue;
      if (!tops.some((top) => Math.abs(top - rect.top) < rect.height / 2)) tops.push(rect.top);
    }
    return tops.length;
  };
  const SEPARATOR = /[\\/_.@:?&=+,-]/;
  const INLINE = /^(inline|contents|table.*|inline-table)$/;
  /**
   * The content width of the box a word lays out in: the nearest block (or inline-block) around
   * it, and for a word in a table laid out as a table the block around the table.
   */
  const boxWidth = (el) => {
    let box = el;
    while (box.parentElement && INLINE.test(getComputedStyle(box).display)) box = box.parentElement;
    const cell = box.closest("td, th");
    if (cell && getComputedStyle(cell).display === "table-cell") {
      return boxWidth(cell.closest("table").parentElement);
    }
    const style = getComputedStyle(box);
    return box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || isHidden(parent)) continue;
    if (parent.closest("script, style, textarea, select, option, svg, noscript")) continue;
    const text = node.data;
    for (const match of text.matchAll(/\\S+/g)) {
      const word = match[0];
      if (word.length < 2 || word.length >= ${DATA_WORD_LENGTH}) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + word.length);
      if (lines(range) < 2) continue;
      // Where it breaks: the characters that start a new line.
      const cut = [];
      let top = null;
      for (let i = 0; i < word.length; i++) {
        range.setStart(node, match.index + i);
        range.setEnd(node, match.index + i + 1);
        const box = [...range.getClientRects()].find((r) => r.width > 0);
        if (!box) continue;
        if (top !== null && box.top > top + box.height / 2) cut.push(i);
        top = box.top;
      }
      const core = word.replace(/^[^\\p{L}\\p{N}]+|[^\\p{L}\\p{N}%]+$/gu, "");
      const numeric = !/\\p{L}/u.test(core.replace(/(?<=\\d)[TZ](?=\\d|$)/g, ""));
      const atSeparator = (i) => SEPARATOR.test(word[i - 1]) || SEPARATOR.test(word[i]);
      range.setStart(node, match.index);
      range.setEnd(node, match.index + word.length);
      const wide = [...range.getClientRects()].reduce((sum, r) => sum + r.width, 0);
      const allowed = wide > boxWidth(parent) + 1 || (!numeric && cut.every(atSeparator));
      if (allowed) continue;
      const shown = cut.reduceRight((w, i) => w.slice(0, i) + "|" + w.slice(i), word);
      const where = parent.tagName.toLowerCase() + (parent.className && typeof parent.className === "string" ? "." + parent.className.trim().split(/\\s+/).join(".") : "");
      problems.push('"' + word + '" breaks inside ("' + shown + '") in ' + where);
    }
  }
  const header = document.querySelector(".site-header .header-inner");
  if (header && innerWidth > 720) {
    const items = [...header.children].filter((el) => !isHidden(el));
    const tops = items.map((el) => el.getBoundingClientRect().top);
    const navItems = [...header.querySelectorAll(".main-nav li")].map((el) => el.getBoundingClientRect().top);
    if (Math.max(...tops, ...navItems) - Math.min(...tops, ...navItems) > 12) {
      problems.push("the header takes more than one line: " + Math.round(header.getBoundingClientRect().height) + " px high");
    }
  }
  return [...new Set(problems)].slice(0, 20);
})()`;

interface Visit {
  page: Page;
  screen: string;
  problems: string[];
  /** Words broken inside, and a header of more than one line. */
  splits: string[];
}

/** Opens every folded section, records what overflows, and saves the screenshot. */
async function inspect(v: Visit, name: string): Promise<void> {
  await v.page.evaluate(`document.querySelectorAll("details").forEach((d) => { d.open = true; })`);
  const found = await v.page.evaluate<string[]>(OVERFLOWS);
  for (const problem of found) v.problems.push(`${name} at ${v.screen}: ${problem}`);
  const split = await v.page.evaluate<string[]>(WORD_SPLITS);
  for (const problem of split) v.splits.push(`${name} at ${v.screen}: ${problem}`);
  await screenshot(v.page, `layout-${name}-${v.screen}`);
}

Deno.test({
  name: "no admin page scrolls sideways or overflows a cell, whatever its data",
  ignore: !hasChromium,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("layout");
  let server: ServerProcess | null = null;
  let browser: Browser | null = null;
  try {
    // Single sign-on on, with a provider that cannot be reached: its pages are the
    // refusals (docs/sso.md), and the password form stays.
    server = await startServer(dataDir, {
      APP_OIDC_ISSUER: "http://127.0.0.1:9/",
      APP_OIDC_CLIENT_ID: "uds-layout",
      APP_OIDC_ADMIN_GROUPS: "admins",
    });
    const base = server.baseUrl;
    const seeded = await seed(base);
    browser = await launchBrowser();
    const problems: string[] = [];
    const splits: string[] = [];
    const visited = new Set<string>();

    for (const size of SCREENS) {
      await t.step(`${size.name}: every page`, async (step) => {
        const context = await browser!.newContext({
          viewport: { width: size.width, height: size.height },
        });
        const page = await context.newPage();
        const v: Visit = { page, screen: size.name, problems, splits };
        const open = async (pattern: string, path: string, name: string, worst = 499) => {
          const res = await page.goto(`${base}${path}`);
          assert.ok(res && res.status() <= worst, `${path}: HTTP ${res?.status()}`);
          visited.add(pattern);
          await inspect(v, name);
        };

        await open("/admin/login", "/admin/login", "login");
        // The provider cannot be reached: 502 with the page that says so.
        await open("/admin/login/sso", "/admin/login/sso", "sso-unreachable", 502);
        await open("/admin/login/sso/callback", "/admin/login/sso/callback", "sso-refused", 502);
        await signIn(page, base);
        await open("/admin", "/admin", "dashboard");
        await open("/admin/projects", "/admin/projects", "projects");
        await open("/admin/projects/:slug", `/admin/projects/${SLUG}`, "project");
        for (const tab of ["releases", "feeds", "settings", "rollout"]) {
          await open(
            `/admin/projects/:slug/${tab}`,
            `/admin/projects/${SLUG}/${tab}`,
            `project-${tab}`,
          );
        }
        await step.step("the rollout card: buttons in a row, headings clear of them", async () => {
          const card = await page.evaluate<{ tops: number[]; gap: number; local: string }>(`(() => {
            const buttons = [...document.querySelectorAll(".rollout-actions button")];
            const heading = document.querySelector("#rollout details.fold > summary");
            const last = buttons.at(-1).getBoundingClientRect();
            return {
              tops: buttons.map((b) => Math.round(b.getBoundingClientRect().top)),
              gap: heading.getBoundingClientRect().top - last.bottom,
              local: document.querySelector("[data-local-time-of]").textContent,
            };
          })()`);
          assert.equal(card.tops.length, 3);
          assert.equal(new Set(card.tops).size, 1, `one row: ${card.tops}`);
          assert.ok(card.gap >= 16, `the heading is ${card.gap} px below the buttons`);
          assert.match(card.local, /your time/);
        });
        await open("/admin/releases/:id", `/admin/releases/${seeded.releaseId}`, "release");
        await open("/admin/upload", "/admin/upload", "upload");
        await open("/admin/api-keys", "/admin/api-keys", "api-keys");
        await open("/admin/api-keys/:id", `/admin/api-keys/${seeded.keyId}`, "api-key");
        await open("/admin/publish-tokens", "/admin/publish-tokens", "publish-tokens");
        await open("/admin/webhooks", "/admin/webhooks", "webhooks");
        await open("/admin/webhooks/:id", `/admin/webhooks/${seeded.webhookId}`, "webhook");
        // A test ping (to a host that cannot be reached) leads to its delivery's page.
        await Promise.all([
          page.waitForURL(/\/deliveries\/[0-9a-z]+$/),
          page.click("#webhook-state button[type=submit]"),
        ]);
        visited.add("/admin/webhooks/:id/deliveries/:delivery");
        await inspect(v, "webhook-delivery");
        await open(
          "/admin/webhooks/:id/delete",
          `/admin/webhooks/${seeded.webhookId}/delete`,
          "webhook-delete",
        );
        await open("/admin/accounts", "/admin/accounts", "accounts");
        await open("/admin/audit", "/admin/audit", "audit");
        await open("/admin/signing-keys", "/admin/signing-keys", "signing-keys");
        await open("/admin/account/password", "/admin/account/password", "password");
        await open("not found", `/admin/projects/${SLUG}x`, "not-found");

        // Pages that answer a form: the retention dry run, the new key, token and endpoint.
        /** Fills a form, sends it and inspects the page that answers (marked by `answered`). */
        const answer = async (
          path: string,
          form: {
            fields: Record<string, string>;
            check?: string;
            submit: string;
            answered: string;
          },
          name: string,
        ) => {
          await page.goto(`${base}${path}`);
          for (const [selector, value] of Object.entries(form.fields)) {
            await page.fill(selector, value);
          }
          if (form.check) await page.check(form.check);
          await Promise.all([page.waitForSelector(form.answered), page.click(form.submit)]);
          await inspect(v, name);
        };
        await answer(`/admin/projects/${SLUG}/settings`, {
          fields: { "#retention-keep-active": "1" },
          submit: "#retention button[value=preview]",
          answered: "[data-retention-plan]",
        }, "retention-dry-run");
        await answer("/admin/api-keys?new=1", {
          fields: { "#key-name": `${KEY_NAME.slice(1)}${size.name[0]}` },
          submit: "#new-key button[type=submit]",
          answered: "[data-api-key]",
        }, "api-key-created");
        await answer("/admin/publish-tokens?new=1", {
          fields: { "#token-name": TOKEN_NAME, "#token-projects": SLUG },
          submit: "#new-token button[type=submit]",
          answered: "[data-publish-token]",
        }, "publish-token-created");
        await answer("/admin/webhooks", {
          fields: { "#webhook-url": WEBHOOK_URL },
          check: "input[name=events][value='key.created']",
          submit: "#webhook-form button[type=submit]",
          answered: "#webhook-secret",
        }, "webhook-created");

        // The upload page after an upload through its script: the status line.
        await page.goto(`${base}/admin/upload`);
        await page.selectOption("#upload-project", SLUG);
        await page.fill("input[name=version]", `3.0.${size.width}`);
        await page.setInputFiles("input[name=file]", {
          name: FILE_NAME,
          mimeType: "application/octet-stream",
          buffer: Buffer.from("some bytes"),
        });
        await page.click("[data-upload-submit]");
        await page.waitForSelector("form[data-upload-state=done], form[data-upload-state=error]");
        await inspect(v, "upload-done");
        await context.close();
      });
    }

    await t.step("without JavaScript an endpoint is deleted after a confirmation", async () => {
      const context = await browser!.newContext({ javaScriptEnabled: false });
      const page = await context.newPage();
      await signIn(page, base);
      await page.goto(`${base}/admin/webhooks`);
      const rows = await page.locator("tr[data-webhook-id]").count();
      await Promise.all([
        page.waitForURL(/\/delete$/),
        page.click(`tr[data-webhook-id='${seeded.webhookId}'] a:text-is('Delete…')`),
      ]);
      await Promise.all([
        page.waitForURL(`${base}/admin/webhooks`),
        page.click("button:text-is('Delete endpoint')"),
      ]);
      assert.equal(await page.locator("tr[data-webhook-id]").count(), rows - 1);
      await context.close();
    });

    await t.step("every admin page was visited", async () => {
      const missing = (await adminPageRoutes()).filter((pattern) => !visited.has(pattern));
      assert.deepEqual(missing, [], "pages the test does not open");
    });

    await t.step("nothing overflows", () => {
      assert.equal(problems.length, 0, `what overflows:\n${problems.join("\n")}`);
    });

    await t.step("no word breaks inside, the header takes one line", () => {
      assert.equal(splits.length, 0, `words broken inside:\n${splits.join("\n")}`);
    });
  } finally {
    await browser?.close();
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
