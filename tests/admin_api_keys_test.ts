import assert from "node:assert/strict";
import { getApiKey, listApiKeys } from "../src/credentials/api_keys.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { parseExpiresAt } from "../src/projects/validate.ts";
import { seedProject, seedRelease } from "./helpers.ts";
import {
  type AdminClient,
  createAdminTestApp,
  type Fields,
  signedInClient,
} from "./admin_helpers.ts";

/** Creates a key through the form; returns the page and the markers. */
async function createKey(client: AdminClient, fields: Fields) {
  const res = await client.post("/admin/api-keys", fields);
  const html = await res.text();
  const secret = /data-api-key="([^"]+)"/.exec(html)?.[1];
  const id = /data-api-key-id="(\d+)"/.exec(html)?.[1];
  return { res, html, secret, id: id === undefined ? undefined : Number(id) };
}

Deno.test("admin API keys", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);
  const desktop = await seedProject(app, { slug: "desktop", name: "Desktop", tags: ["stable"] });
  const mobile = await seedProject(app, { slug: "mobile", name: "Mobile", tags: ["beta"] });
  await seedRelease(app, desktop.id, "1.0.0");
  await seedRelease(app, mobile.id, "2.0.0");
  const logged: string[] = [];
  const originalLog = console.log;
  const originalError = console.error;
  console.log = (...args) => logged.push(args.join(" "));
  console.error = (...args) => logged.push(args.join(" "));

  let firstSecret = "";
  let firstId = 0;

  await t.step("the page has the create form with every field and the scope editor", async () => {
    const { res, html } = await client.page("/admin/api-keys");
    assert.equal(res.status, 200);
    for (
      const name of ["name", "can_download", "scope_mode", "project_slugs", "tags", "expires_at"]
    ) {
      assert.match(html, new RegExp(`name="${name}"`), name);
    }
    for (
      const mode of [
        "all_projects",
        "project_allow_list",
        "project_deny_list",
        "tag_allow_list",
        "tag_deny_list",
      ]
    ) {
      assert.match(html, new RegExp(`value="${mode}"`), mode);
    }
    // Projects are typed (comma-separated slugs, suggested from a search), not one checkbox each.
    assert.match(html, /name="project_slugs" type="text"/);
    assert.doesNotMatch(html, /name="project_slugs" type="checkbox"/);
    assert.match(html, /list="key-project-choices"/);
    assert.match(html, /name="tags" type="checkbox" value="stable"/);
  });

  await t.step(
    "the slug search suggests projects whose slug starts with what is typed",
    async () => {
      const res = await client.fetch("/admin/project-slugs?q=DESK");
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.deepEqual(body.projects.map((p: { slug: string }) => p.slug), ["desktop"]);
      const none = await (await client.fetch("/admin/project-slugs?q=zzz")).json();
      assert.deepEqual(none.projects, []);
    },
  );

  await t.step("create: 200 with the key once in data-api-key, and its id", async () => {
    const { res, html, secret, id } = await createKey(client, {
      name: "Desktop updater",
      can_download: "on",
      scope_mode: "project_allow_list",
      project_slugs: "Desktop",
      expires_at: "",
    });
    assert.equal(res.status, 200);
    assert.match(secret!, /^uds_[A-Za-z0-9_-]{43}$/);
    assert.ok(id! > 0);
    assert.equal(html.match(/data-api-key="/g)?.length, 1);
    // The key is in one element: its data-api-key attribute, and its text (selectable).
    const element = /<(\w+)[^>]*data-api-key="[^"]*"[^>]*>([^<]*)<\/\1>/.exec(html)!;
    const holder = element[0];
    assert.ok(holder.includes(`data-api-key="${secret}"`), "…in the data-api-key attribute");
    assert.ok(holder.includes(`data-api-key-id="${id}"`), "…of the element with its id");
    assert.equal(element[2].trim(), secret, "…shown as the element's text");
    const outside = html.replace(holder, "");
    for (const part of [secret!, secret!.slice(0, 12), secret!.slice(-12)]) {
      assert.ok(!outside.includes(part), "no other full, partial or escaped copy");
    }
    assert.match(html, /data-copy-key="#new-api-key"/, "a copy key button");
    assert.match(html, /data-copy-command="#curl-example"/, "a copy command button");
    // The copy buttons need the script: hidden in the HTML, shown by admin.js.
    assert.equal(
      html.match(/<button[^>]*data-copy-(key|command)[^>]*\shidden(=""|[\s>])/g)?.length,
      2,
    );
    assert.match(
      html,
      /curl -fsS -H (&quot;|")Authorization: Bearer \$UDS_API_KEY(&quot;|")/,
      "the example command reads the key from a shell variable",
    );
    assert.match(html, /export UDS_API_KEY=/);
    for (const [name, value] of res.headers) {
      assert.ok(!value.includes(secret!), `header ${name}`);
    }
    assert.match(html, /\/api\/v1\/projects\/desktop\/releases\/latest/);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const stored = await getApiKey(app.store, id!);
    assert.equal(stored?.scope_mode, "project_allow_list");
    assert.deepEqual(stored?.project_ids, [desktop.id]);
    assert.equal(stored?.can_download, true);
    assert.equal(stored?.expires_at, null);
    firstSecret = secret!;
    firstId = id!;
  });

  await t.step("the new key works against the client API within its scope", async () => {
    const ok = await app.request("/api/v1/projects/desktop/releases/latest", firstSecret);
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    const outside = await app.request("/api/v1/projects/mobile/releases/latest", firstSecret);
    assert.equal(outside.status, 404);
    await outside.body?.cancel();
  });

  await t.step("the key list shows every key but never the secret", async () => {
    const { html } = await client.page("/admin/api-keys");
    assert.ok(!html.includes(firstSecret));
    assert.match(html, new RegExp(`<tr data-api-key-id="${firstId}"`));
    const row = html.split(`data-api-key-id="${firstId}"`)[1].split("</tr>")[0];
    assert.match(row, /Desktop updater/);
    assert.match(row, /Only these projects/);
    assert.match(row, /desktop/);
    assert.match(row, /allowed/);
    assert.match(row, /badge-active/);
    assert.match(row, /never/);
  });

  // The contract: an empty allow list grants nothing, and such a key is still created
  // (outside tools make them); the page says that it reaches no project.
  await t.step("projects with these tags, no tag given: created, with a warning", async () => {
    const { res, html, secret, id } = await createKey(client, {
      name: "Reaches nothing",
      can_download: "on",
      scope_mode: "tag_allow_list",
      tags: " , ",
      project_slugs: "desktop",
    });
    assert.equal(res.status, 200);
    assert.match(secret!, /^uds_/);
    assert.match(html, /role="status" data-reaches-nothing/);
    assert.match(html, /reaches no project/);
    const stored = await getApiKey(app.store, id!);
    assert.equal(stored?.scope_mode, "tag_allow_list");
    assert.deepEqual(stored?.tags, []);
    assert.deepEqual(stored?.project_ids, []);
    const api = await app.request("/api/v1/projects", secret!);
    assert.equal(api.status, 200);
    assert.deepEqual((await api.json()).projects, [], "the key reaches no project");
    // The deny lists may stay empty: they deny nothing, and no warning is shown.
    const denyNone = await createKey(client, {
      name: "Deny none",
      scope_mode: "tag_deny_list",
      tags: "",
    });
    assert.equal(denyNone.res.status, 200);
    assert.doesNotMatch(denyNone.html, /data-reaches-nothing/);
  });

  await t.step("only these projects, none chosen: created, warned on both pages", async () => {
    const { res, html, id } = await createKey(client, {
      name: "No projects",
      can_download: "on",
      scope_mode: "project_allow_list",
      project_slugs: "",
      tags: "ignored",
    });
    assert.equal(res.status, 200);
    assert.match(html, /role="status" data-reaches-nothing/);
    const stored = await getApiKey(app.store, id!);
    assert.equal(stored?.scope_mode, "project_allow_list");
    assert.deepEqual(stored?.project_ids, []);
    const { html: listHtml } = await client.page("/admin/api-keys");
    const row = listHtml.split(`data-api-key-id="${id}"`)[1].split("</tr>")[0];
    assert.match(row, /role="status" data-reaches-nothing/);
    assert.match(row, /reaches no project/);
    const scoped = listHtml.split(`data-api-key-id="${firstId}"`)[1].split("</tr>")[0];
    assert.doesNotMatch(scoped, /data-reaches-nothing/, "a key with projects has no warning");
  });

  await t.step("scope modes keep only the list they use", async () => {
    const tag = await createKey(client, {
      name: "Beta testers",
      scope_mode: "tag_allow_list",
      tags: ["Beta", "", "nightly, beta"],
      project_slugs: "desktop",
      expires_at: "2031-01-02T03:04",
    });
    assert.equal(tag.res.status, 200);
    const stored = await getApiKey(app.store, tag.id!);
    assert.deepEqual(stored?.tags, ["beta", "nightly"]);
    assert.deepEqual(stored?.project_ids, []);
    assert.equal(stored?.can_download, false, "unchecked box: no download");
    assert.equal(stored?.expires_at, "2031-01-02T03:04:00.000Z");

    const deny = await createKey(client, {
      name: "All but mobile",
      can_download: "on",
      scope_mode: "project_deny_list",
      project_slugs: ["mobile", "desktop"],
      tags: "ignored",
      expires_at: "2031-06-01T12:00:00+02:00",
    });
    const denied = await getApiKey(app.store, deny.id!);
    assert.deepEqual(denied?.project_ids.sort(), [desktop.id, mobile.id].sort());
    assert.deepEqual(denied?.tags, []);
    assert.equal(denied?.expires_at, "2031-06-01T10:00:00.000Z");
  });

  for (
    const [label, fields, field, message] of [
      [
        "unknown project slug",
        { scope_mode: "project_allow_list", project_slugs: "desktop, nope" },
        "project_slugs",
        /unknown project (&quot;|")nope/,
      ],
      ["bad scope mode", { scope_mode: "everything" }, "scope_mode", /Scope must be one of/],
      ["missing scope mode", { scope_mode: "" }, "scope_mode", /Scope must be one of/],
      [
        "bad expiry",
        { scope_mode: "all_projects", expires_at: "next tuesday" },
        "expires_at",
        /Expires must be/,
      ],
      [
        "impossible date",
        { scope_mode: "all_projects", expires_at: "2026-02-30T10:00" },
        "expires_at",
        /Expires must be/,
      ],
      ["missing name", { scope_mode: "all_projects", name: " " }, "name", /Name is required/],
    ] as const
  ) {
    await t.step(`${label}: 400, form with message and values, nothing stored`, async () => {
      const before = (await listApiKeys(app.store)).length;
      const { res, html, secret } = await createKey(client, {
        name: "Kept name",
        can_download: "on",
        tags: "kept-tag",
        ...fields,
      });
      assert.equal(res.status, 400);
      assert.equal(secret, undefined);
      assert.match(html, message);
      assert.match(html, /data-form-error/);
      assert.match(html, new RegExp(`aria-describedby="[^"]*-error"`), field);
      if (label !== "missing name") assert.match(html, /value="Kept name"/);
      assert.match(html, /kept-tag/);
      assert.equal((await listApiKeys(app.store)).length, before);
    });
  }

  await t.step("disable and enable: 303, the API follows", async () => {
    const disabled = await client.post(`/admin/api-keys/${firstId}/disable`);
    assert.equal(disabled.status, 303);
    assert.equal(disabled.headers.get("location"), "/admin/api-keys#key-list");
    assert.equal((await getApiKey(app.store, firstId))?.active, false);
    const refused = await app.request("/api/v1/projects", firstSecret);
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
    const { html } = await client.page("/admin/api-keys");
    const row = html.split(`data-api-key-id="${firstId}"`)[1].split("</tr>")[0];
    assert.match(row, /badge-disabled/);
    assert.match(row, new RegExp(`/admin/api-keys/${firstId}/enable`));
    const enabled = await client.post(`/admin/api-keys/${firstId}/enable`);
    assert.equal(enabled.status, 303);
    const accepted = await app.request("/api/v1/projects", firstSecret);
    assert.equal(accepted.status, 200);
    await accepted.body?.cancel();
    assert.equal((await client.post("/admin/api-keys/999/disable")).status, 404);
    assert.equal((await client.post("/admin/api-keys/x/enable")).status, 404);
  });

  await t.step("key changes are audited without the secret; nothing logs it", async () => {
    const { entries } = await listAuditEntries(app.store, { limit: 100 });
    const actions = entries.map((entry) => `${entry.action} ${entry.target}`);
    assert.ok(actions.includes(`api_key.create api key ${firstId}`));
    assert.ok(actions.includes(`api_key.disable api key ${firstId}`));
    assert.ok(actions.includes(`api_key.enable api key ${firstId}`));
    assert.ok(!JSON.stringify(entries).includes(firstSecret));
    assert.ok(!logged.join("\n").includes(firstSecret));
    const audit = await client.page("/admin/audit");
    assert.ok(!audit.html.includes(firstSecret));
  });

  console.log = originalLog;
  console.error = originalError;
});

Deno.test("expires_at accepts RFC 3339 and datetime-local (UTC)", () => {
  assert.equal(parseExpiresAt(""), null);
  assert.equal(parseExpiresAt("2026-12-31T23:59:59Z"), "2026-12-31T23:59:59.000Z");
  assert.equal(parseExpiresAt("2026-12-31T23:59"), "2026-12-31T23:59:00.000Z");
  assert.equal(parseExpiresAt("2026-12-31T23:59:30"), "2026-12-31T23:59:30.000Z");
  assert.equal(parseExpiresAt("2026-12-31T23:59:59.5-01:00"), "2027-01-01T00:59:59.500Z");
  for (
    const bad of ["2026-12-31", "tomorrow", "2026-13-01T00:00", "2026-12-31T24:00", "12/31/2026"]
  ) {
    assert.throws(() => parseExpiresAt(bad), ValidationError, bad);
  }
});
