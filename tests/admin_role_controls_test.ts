/**
 * Role-aware pages (docs/admin-ui.md "Accounts and roles"): on every page a publisher or a viewer
 * can open, with realistic data, no form posts to a route its role is refused (the forms are
 * matched against the app's own route list and admin/roles.ts); the dashboard offers a viewer
 * no "New project", "Upload a release" or "New API key"; the header names the account and role.
 */
import assert from "node:assert/strict";
import { seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { AdminClient, createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { adminRoutes } from "./admin_routes.ts";
import { seedPublishToken } from "./publish_helpers.ts";
import { seedAttention, startFailingReceiver } from "./attention_fixtures.ts";
import { rolesFor } from "../admin/roles.ts";
import type { AdminRole } from "../src/accounts/admin_users.ts";

const PASSWORD = "a long enough password";

/** The registered POST route a form's action goes to, or null. */
function postRouteOf(app: TestApp, action: string): string | null {
  const path = action.split(/[?#]/)[0];
  const candidates = app.app.routes.filter((r) => r.method === "POST");
  // A literal route wins over one with a parameter in the same place (as the router decides).
  const matching = candidates.filter((r) => {
    const pattern = new RegExp(`^${r.path.replace(/:\w+/g, "[^/]+")}$`);
    return pattern.test(path);
  }).sort((a, b) => (a.path.match(/:/g)?.length ?? 0) - (b.path.match(/:/g)?.length ?? 0));
  return matching.length === 0 ? null : `POST ${matching[0].path}`;
}

/** The actions of the page's POST forms. */
function postActions(html: string): string[] {
  const actions: string[] = [];
  for (const [form] of html.matchAll(/<form\b[^>]*>/g)) {
    if (!/method="post"/i.test(form)) continue;
    actions.push(/action="([^"]*)"/.exec(form)?.[1].replaceAll("&amp;", "&") ?? "");
  }
  return actions;
}

/** Every form on the pages `client` can open that posts to a route `role` is refused. */
async function unusableForms(
  app: TestApp,
  client: AdminClient,
  { role, paths }: { role: AdminRole; paths: string[] },
): Promise<{ pages: number; forms: string[] }> {
  const forms: string[] = [];
  let pages = 0;
  for (const path of paths) {
    const res = await client.fetch(path);
    const html = await res.text();
    if (res.status !== 200 || !/^text\/html/.test(res.headers.get("content-type") ?? "")) continue;
    pages++;
    for (const action of postActions(html)) {
      const route = postRouteOf(app, action);
      if (route === null || !rolesFor(route).includes(role)) forms.push(`${path}: ${action}`);
    }
  }
  return { pages, forms };
}

Deno.test("a publisher and a viewer see no control their role cannot use", async (t) => {
  await using app = await createAdminTestApp({ webhooksAllowPrivate: true });
  const receiver = startFailingReceiver();
  try {
    const seeded = await seedAttention(app, { webhookUrl: receiver.url });
    const alpha = await seedProject(app, { slug: "alpha", name: "Alpha" });
    const release = await seedRelease(app, alpha.id, "1.0.0");
    await seedRelease(app, alpha.id, "1.1.0");
    const { token } = await seedPublishToken(app.store, { name: "nightly" });
    await seedKey(app, { name: "beta testers" });
    const admin = await signedInClient(app);
    for (const [username, role] of [["pat", "publisher"], ["vic", "viewer"]]) {
      await admin.page("/admin/accounts");
      const res = await admin.post("/admin/accounts", { username, password: PASSWORD, role });
      assert.equal(res.status, 303);
    }
    const paths = [
      ...adminRoutes(app, {
        releaseId: release.id,
        keyId: seeded.keyId,
        tokenId: token.id,
        username: "vic",
      }).filter((r) => r.method === "GET" && r.pattern.startsWith("/admin")).map((r) => r.path),
      // Every project's pages and its releases (rollouts, gates, a rollback on them).
      ...["acme-desktop", "acme-mobile-sync", "field-notes"].flatMap((s) =>
        ["", "/releases", "/rollout", "/feeds", "/settings"].map((tab) =>
          `/admin/projects/${s}${tab}`
        )
      ),
      "/admin/projects?new=1",
      "/admin/api-keys?new=1",
    ];

    for (const [username, role] of [["pat", "publisher"], ["vic", "viewer"]] as const) {
      await t.step(`${role}: no form it cannot use`, async () => {
        const client = new AdminClient(app);
        assert.equal((await client.signIn(username, PASSWORD)).status, 303);
        const { pages, forms } = await unusableForms(app, client, { role, paths });
        assert.ok(pages >= 8, `${role} opened ${pages} pages`);
        assert.deepEqual(forms, [], `${forms.length} unusable forms on ${pages} pages`);
      });
    }

    await t.step("an admin still gets every form (the check finds forms)", async () => {
      const { forms } = await unusableForms(app, admin, { role: "viewer", paths });
      assert.ok(forms.length >= 20, `${forms.length} forms an admin has that a viewer has not`);
    });

    await t.step("a viewer's dashboard offers nothing to create", async () => {
      const viewer = new AdminClient(app);
      await viewer.signIn("vic", PASSWORD);
      const { html } = await viewer.page("/admin");
      for (const text of ["New project", "Upload a release", "New API key"]) {
        assert.ok(!html.includes(text), `no "${text}"`);
      }
      const { html: ofAdmin } = await admin.page("/admin");
      for (const text of ["New project", "Upload a release", "New API key"]) {
        assert.ok(ofAdmin.includes(text), `an admin has "${text}"`);
      }
    });

    await t.step("the header names the account and its role", async () => {
      for (const [username, role] of [["pat", "publisher"], ["vic", "viewer"]]) {
        const client = new AdminClient(app);
        await client.signIn(username, PASSWORD);
        const { html } = await client.page("/admin/projects");
        assert.match(html, new RegExp(`data-signed-in="${username}"`));
        assert.match(html, new RegExp(`data-role="${role}"`));
      }
      assert.match((await admin.page("/admin")).html, /data-role="admin"/);
    });
  } finally {
    await receiver.close();
  }
});
