import assert from "node:assert/strict";
import { recordAudit } from "../src/kv/audit.ts";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import { AdminClient, createAdminTestApp, signedInClient } from "./admin_helpers.ts";

Deno.test("admin dashboard", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);
  const one = await seedProject(app, { slug: "one", name: "One" });
  await seedProject(app, { slug: "two", name: "Two" });
  await client.post("/admin/projects/two/archive");
  await seedRelease(app, one.id, "1.0.0");
  const latest = await seedRelease(app, one.id, "1.1.0");
  await seedKey(app);
  const { apiKey } = await seedKey(app, { name: "second" });
  await client.post(`/admin/api-keys/${apiKey.id}/disable`);

  await t.step("counts, recent releases and quick links", async () => {
    const { res, html } = await client.page("/admin");
    assert.equal(res.status, 200);
    assert.match(html, /data-count="projects">2</);
    assert.match(html, /1 archived/);
    assert.match(html, /data-count="releases">2</);
    assert.match(html, /data-count="api-keys">2</);
    assert.match(html, /1 active/);
    assert.match(html, new RegExp(`data-release-id="${latest.id}"`));
    assert.ok(html.indexOf("1.1.0") < html.indexOf("1.0.0"), "newest first");
    for (
      const href of [
        "/admin/projects?new=1#new-project",
        "/admin/api-keys?new=1#new-key",
        "/admin/audit",
      ]
    ) {
      assert.ok(html.includes(`href="${href}"`), href);
    }
  });
});

Deno.test("admin audit log pages newest first", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);
  const base = Date.now() - 1_000_000;
  for (let i = 0; i < 120; i++) {
    await recordAudit(app.store, {
      actor: "admin",
      action: "admin.test_event",
      target: `item ${i}`,
      details: "",
      address: "192.0.2.1",
    }, base + i * 1000);
  }

  await t.step("50 a page, with a link to older entries", async () => {
    const first = await client.page("/admin/audit");
    assert.equal(first.res.status, 200);
    // The sign-in is the newest entry.
    assert.ok(first.html.indexOf("auth.sign_in") < first.html.indexOf("item 119"));
    assert.equal(first.html.match(/<tr data-audit-action=/g)?.length, 50);
    const next = /href="\/admin\/audit\?before=([^"]+)"/.exec(first.html)![1];
    const second = await client.page(`/admin/audit?before=${next}`);
    assert.equal(second.html.match(/<tr data-audit-action=/g)?.length, 50);
    assert.match(second.html, /item 70</);
    assert.match(second.html, /item 21</);
    assert.doesNotMatch(second.html, /item 71</);
    const third = /href="\/admin\/audit\?before=([^"]+)"/.exec(second.html)![1];
    const last = await client.page(`/admin/audit?before=${third}`);
    assert.equal(last.html.match(/<tr data-audit-action=/g)?.length, 21);
    assert.doesNotMatch(last.html, /Older entries/);
    assert.match(last.html, /192\.0\.2\.1/);
  });

  await t.step("a broken cursor starts from the newest", async () => {
    const res = await client.fetch("/admin/audit?before=garbage");
    assert.equal(res.status, 200);
  });
});

Deno.test("admin pages are safe", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);

  await t.step("CSP without inline scripts, security headers, no caching", async () => {
    for (const path of ["/admin", "/admin/login", "/admin/projects", "/admin/nowhere"]) {
      const res = await client.fetch(path);
      await res.body?.cancel();
      const csp = res.headers.get("content-security-policy") ?? "";
      assert.match(csp, /script-src 'self'/, path);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.equal(res.headers.get("x-frame-options"), "DENY", path);
      assert.equal(res.headers.get("referrer-policy"), "no-referrer", path);
      assert.equal(res.headers.get("x-content-type-options"), "nosniff", path);
      assert.equal(res.headers.get("cache-control"), "no-store", path);
    }
  });

  await t.step("pages hold no inline script or style", async () => {
    await seedProject(app, { slug: "p", name: "P" });
    for (const path of ["/admin", "/admin/projects", "/admin/projects/p", "/admin/api-keys"]) {
      const { html } = await client.page(path);
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, path);
      assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i, path);
    }
  });

  await t.step("the stylesheet and script are served by the app", async () => {
    const { html } = await new AdminClient(app).page("/admin/login");
    for (
      const [url, type] of [[/href="(\/admin\/static\/style\.css\?v=\w+)"/, "text/css"], [
        /src="(\/admin\/static\/admin\.js\?v=\w+)"/,
        "text/javascript",
      ]] as const
    ) {
      const path = url.exec(html)![1];
      const res = await new AdminClient(app).fetch(path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get("content-type")!, new RegExp(type));
      assert.match(res.headers.get("cache-control")!, /immutable/);
      assert.ok((await res.text()).length > 1000);
    }
    const missing = await client.fetch("/admin/static/nope.js");
    assert.equal(missing.status, 404);
    assert.match(missing.headers.get("content-type")!, /^text\/html/);
    assert.match(await missing.text(), /There is no such page/);
  });

  await t.step("everything shown is escaped", async () => {
    const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`;
    const res = await client.post("/admin/projects", {
      name: evil,
      slug: "evil",
      description: evil,
      tags: `<b>tag</b>`,
    });
    assert.equal(res.status, 303);
    for (const path of ["/admin/projects", "/admin/projects/evil", "/admin"]) {
      const { html } = await client.page(path);
      assert.ok(!html.includes("<script>alert"), path);
      assert.ok(!html.includes("<img src=x"), path);
      assert.ok(!html.includes("<b>tag</b>"), path);
    }
    const { html } = await client.page("/admin/projects/evil");
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  });

  await t.step("unknown admin pages are an HTML 404; the API keeps JSON", async () => {
    const page = await client.fetch("/admin/nowhere");
    assert.equal(page.status, 404);
    assert.match(page.headers.get("content-type")!, /^text\/html/);
    assert.match(await page.text(), /There is no such page/);
    const api = await client.fetch("/api/v1/nowhere");
    assert.equal(api.status, 404);
    assert.deepEqual(await api.json(), { error: "resource not found" });
  });

  await t.step("/ leads to the admin UI; a trailing slash is dropped", async () => {
    const res = await client.fetch("/");
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin");
    const slash = await client.fetch("/admin/projects/");
    assert.equal(slash.status, 301);
    assert.equal(slash.headers.get("location"), "/admin/projects");
  });

  await t.step("an oversized form is refused with 413", async () => {
    const res = await client.post("/admin/projects", {
      name: "big",
      description: "x".repeat(2 * 1024 * 1024),
    });
    assert.equal(res.status, 413);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
  });
});
