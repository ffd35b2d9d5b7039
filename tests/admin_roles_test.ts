/**
 * Several admin accounts with roles (docs/admin-ui.md "Accounts and roles"): a publisher works
 * on projects' releases only, a viewer changes nothing, the last admin stays, the audit log names
 * who did what. The refusals are checked on the app's own route list, as admin_gates_test.ts does.
 */
import assert from "node:assert/strict";
import { lastAudit, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import {
  ADMIN_USER,
  AdminClient,
  createAdminTestApp,
  type Fields,
  signedInClient,
} from "./admin_helpers.ts";
import {
  type AdminRoute,
  type AdminRouteIds,
  adminRoutes,
  stateSnapshot,
  TOKEN_GATED_PREFIX,
} from "./admin_routes.ts";
import { seedPublishToken } from "./publish_helpers.ts";
import {
  type AdminUser,
  getAdminUser,
  LastAdminError,
  setAdminRole,
} from "../src/accounts/admin_users.ts";
import { getLatestRelease } from "../src/releases/releases.ts";
import { getRollout } from "../src/releases/rollouts.ts";
import { adminUserKey } from "../src/kv/keys.ts";

const PASSWORD = "a long enough password";

/** Routes every role may use: its own session and password. */
const SELF_SERVICE = new Set([
  "POST /admin/logout",
  "GET /admin/account/password",
  "POST /admin/account/password",
]);

/** What a publisher may use besides SELF_SERVICE: reading projects and working on releases. */
const PUBLISHER_ROUTES = new Set([
  "GET /admin",
  "GET /admin/audit",
  "GET /admin/projects",
  "GET /admin/projects/:slug",
  "GET /admin/projects/:slug/releases",
  "GET /admin/projects/:slug/rollout",
  "GET /admin/projects/:slug/feeds",
  "GET /admin/projects/:slug/settings",
  "GET /admin/releases/:id",
  "GET /admin/releases/:id/download",
  "POST /admin/projects/:slug/releases",
  "POST /admin/releases/:id",
  "POST /admin/releases/:id/archive",
  "POST /admin/releases/:id/activate",
  "POST /admin/releases/:id/publish",
  "POST /admin/releases/:id/make-latest",
  "POST /admin/projects/:slug/rollout",
  "POST /admin/projects/:slug/rollout/change",
  "POST /admin/projects/:slug/rollout/halt",
  "POST /admin/projects/:slug/rollout/resume",
  "POST /admin/projects/:slug/rollout/complete",
  "POST /admin/projects/:slug/rollout/end",
  "POST /admin/projects/:slug/rollout/gates",
  "POST /admin/projects/:slug/rollout/rollback",
  "POST /admin/projects/:slug/rollout/policy",
]);

/** Fields that would make each POST succeed, so a missing refusal shows as a change. */
const SUCCEEDING_FIELDS: Record<string, Fields> = {
  "/admin/projects": { name: "Beta", slug: "beta", description: "", tags: "x" },
  "/admin/projects/:slug": { name: "Renamed", description: "d", tags: "y" },
  "/admin/releases/:id": { version: "1.0.1", build: "b", release_notes: "n" },
  "/admin/api-keys": { name: "k", scope_mode: "all_projects", can_download: "on" },
  "/admin/api-keys/:id": { name: "renamed", scope_mode: "all_projects", can_download: "on" },
  "/admin/publish-tokens": { name: "ci", all_projects: "on", can_upload: "on" },
  "/admin/accounts": { username: "mallory", password: PASSWORD, role: "admin" },
  "/admin/accounts/:username/role": { role: "admin" },
};

/** The routes under /admin that need a session (not sign-in, static files or publishing API). */
function sessionRoutes(t: TestApp, ids: Omit<AdminRouteIds, "username">): AdminRoute[] {
  return adminRoutes(t, { ...ids, username: "vic" }).filter(({ pattern }) =>
    !pattern.startsWith(TOKEN_GATED_PREFIX) && !pattern.startsWith("/admin/static/") &&
    pattern !== "/admin/login"
  );
}

/** All durable state except sessions and the audit log (reads and refusals may add to those). */
function snapshot(t: TestApp): Promise<string> {
  return stateSnapshot(t, ["admin_sessions", "audit"]);
}

async function createAccount(admin: AdminClient, username: string, role: string) {
  await admin.page("/admin/accounts");
  const res = await admin.post("/admin/accounts", { username, password: PASSWORD, role });
  assert.equal(res.status, 303, `create ${username}`);
}

async function signedInAs(t: TestApp, username: string): Promise<AdminClient> {
  const client = new AdminClient(t);
  assert.equal((await client.signIn(username, PASSWORD)).status, 303, `sign-in of ${username}`);
  return client;
}

/** Sends the route as `client` would (its CSRF token, fields that would succeed, a file). */
async function send(client: AdminClient, route: AdminRoute): Promise<Response> {
  if (route.method === "GET") return await client.fetch(route.path);
  if (route.pattern.endsWith("/releases") && route.pattern.startsWith("/admin/projects/")) {
    return await client.upload(route.path, [
      ["csrf_token", client.csrfToken],
      ["version", "7.0.0"],
      ["file", new File(["bytes"], "x.bin")],
    ]);
  }
  return await client.post(route.path, SUCCEEDING_FIELDS[route.pattern] ?? {});
}

async function assertRefused(res: Response, label: string) {
  assert.equal(res.status, 403, label);
  assert.match(res.headers.get("content-type") ?? "", /^text\/html/, label);
  assert.match(await res.text(), /Request refused/, label);
}

Deno.test("roles: a publisher refused on key pages, a viewer refused on every POST", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "alpha", name: "Alpha" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const { apiKey } = await seedKey(app);
  const { token } = await seedPublishToken(app.store);
  const routes = sessionRoutes(app, { releaseId: release.id, keyId: apiKey.id, tokenId: token.id });
  const admin = await signedInClient(app);
  await createAccount(admin, "pat", "publisher");
  await createAccount(admin, "vic", "viewer");
  const publisher = await signedInAs(app, "pat");
  const viewer = await signedInAs(app, "vic");

  await t.step("the route list is the app's own and holds the accounts routes", () => {
    const names = new Set(routes.map((route) => `${route.method} ${route.pattern}`));
    for (const known of [...SELF_SERVICE, ...PUBLISHER_ROUTES, "GET /admin/accounts"]) {
      assert.ok(names.has(known), `${known} is registered`);
    }
    assert.ok(names.has("POST /admin/accounts/:username/delete"));
    assert.ok(routes.length >= 36, `found ${routes.length} routes`);
  });

  await t.step(
    "a publisher: 403 on every other route, key, token and account pages included",
    async () => {
      const before = await snapshot(app);
      const refused = routes.filter((r) =>
        !PUBLISHER_ROUTES.has(`${r.method} ${r.pattern}`) &&
        !SELF_SERVICE.has(`${r.method} ${r.pattern}`)
      );
      for (const prefix of ["/admin/api-keys", "/admin/publish-tokens", "/admin/accounts"]) {
        assert.ok(refused.some((r) => r.method === "GET" && r.pattern === prefix), prefix);
        assert.ok(refused.some((r) => r.method === "POST" && r.pattern.startsWith(prefix)), prefix);
      }
      for (const route of refused) {
        await assertRefused(await send(publisher, route), `${route.method} ${route.pattern}`);
      }
      assert.equal(await snapshot(app), before);
    },
  );

  await t.step("a viewer: 403 on every POST but its own sign-out and password", async () => {
    const before = await snapshot(app);
    const posts = routes.filter((r) =>
      r.method === "POST" && !SELF_SERVICE.has(`${r.method} ${r.pattern}`)
    );
    assert.ok(posts.length >= 22, `found ${posts.length} POST routes`);
    for (const route of posts) {
      await assertRefused(await send(viewer, route), `POST ${route.pattern}`);
    }
    assert.equal(await snapshot(app), before);
  });

  await t.step("a viewer reads every page but the accounts page", async () => {
    for (const route of routes.filter((r) => r.method === "GET")) {
      const res = await viewer.fetch(route.path);
      await res.body?.cancel();
      // The accounts and signing keys pages are the owner's (admins only).
      const ownerOnly = ["/admin/accounts", "/admin/signing-keys", "/admin/webhooks"];
      if (ownerOnly.some((p) => route.pattern === p || route.pattern.startsWith(`${p}/`))) {
        assert.equal(res.status, 403, route.pattern);
      } else assert.equal(res.status, 200, route.pattern);
    }
  });

  await t.step("the header links each role only to what it may use", async () => {
    const links = (html: string) =>
      [...html.matchAll(/<nav class="main-nav"[\s\S]*?<\/nav>/g)][0][0];
    const ofAdmin = links((await admin.page("/admin")).html);
    const ofPublisher = links((await publisher.page("/admin")).html);
    const ofViewer = links((await viewer.page("/admin")).html);
    assert.match(ofAdmin, /href="\/admin\/accounts"/);
    assert.doesNotMatch(ofPublisher, /api-keys|publish-tokens|accounts/);
    assert.match(ofViewer, /href="\/admin\/api-keys"/);
    assert.doesNotMatch(ofViewer, /accounts/);
  });

  await t.step("a publisher uploads and changes releases; the audit log names it", async () => {
    const uploaded = await publisher.upload("/admin/projects/alpha/releases", [
      ["csrf_token", publisher.csrfToken],
      ["version", "2.0.0"],
      ["file", new File(["new bytes"], "app.bin")],
    ]);
    assert.equal(uploaded.status, 303);
    const upload = await lastAudit(app);
    assert.equal(upload.actor, "pat");
    assert.match(upload.action, /^release\./);
    const archived = await publisher.post(`/admin/releases/${release.id}/archive`);
    assert.equal(archived.status, 303);
    assert.deepEqual(
      [(await lastAudit(app)).actor, (await lastAudit(app)).target],
      ["pat", `release ${release.id}`],
    );
  });

  await t.step("a publisher runs a staged rollout from start to end; audited as it", async () => {
    const staged = await seedRelease(app, project.id, "3.0.0");
    // A newer upload is the latest, so 3.0.0 can be staged over it.
    await seedRelease(app, project.id, "2.5.0");
    await publisher.page("/admin/projects/alpha");
    const steps: Array<[string, Fields, string]> = [
      ["", { release_id: String(staged.id), percentage: "10" }, "rollout.start"],
      ["/change", { percentage: "20", schedule: "", tester_tag: "beta" }, "rollout.change"],
      ["/halt", {}, "rollout.halt"],
      ["/resume", {}, "rollout.resume"],
      ["/complete", {}, "rollout.complete"],
    ];
    for (const [suffix, fields, action] of steps) {
      const res = await publisher.post(`/admin/projects/alpha/rollout${suffix}`, fields);
      assert.equal(res.status, 303, `${suffix}: ${res.status}`);
      const entry = await lastAudit(app);
      assert.deepEqual([entry.actor, entry.action], ["pat", action]);
    }
    assert.equal((await getLatestRelease(app.store, project.id))?.id, staged.id);
    await seedRelease(app, project.id, "3.5.0");
    const again = await publisher.post("/admin/projects/alpha/rollout", {
      release_id: String(staged.id),
      percentage: "5",
    });
    assert.equal(again.status, 303);
    assert.equal((await publisher.post("/admin/projects/alpha/rollout/end")).status, 303);
    assert.deepEqual([(await lastAudit(app)).actor, (await lastAudit(app)).action], [
      "pat",
      "rollout.end",
    ]);
    assert.equal(await getRollout(app.store, project.id), null);
  });

  await t.step("a viewer changes its own password (self-service), then signs out", async () => {
    await viewer.page("/admin/account/password");
    const res = await viewer.post("/admin/account/password", {
      current_password: PASSWORD,
      new_password: "another long password",
      confirm_password: "another long password",
    });
    assert.equal(res.status, 303);
    assert.equal((await lastAudit(app)).actor, "vic");
    assert.equal((await viewer.post("/admin/logout")).status, 303);
  });

  await t.step("a changed role takes effect on the next request", async () => {
    assert.equal((await publisher.fetch("/admin/api-keys")).status, 403);
    await admin.page("/admin/accounts");
    const res = await admin.post("/admin/accounts/pat/role", { role: "admin" });
    assert.equal(res.status, 303);
    const entry = await lastAudit(app);
    assert.deepEqual([entry.actor, entry.action, entry.details], [
      ADMIN_USER,
      "account.role",
      "publisher -> admin",
    ]);
    assert.equal((await publisher.fetch("/admin/api-keys")).status, 200);
  });

  await t.step("a removed account's sessions end", async () => {
    const res = await admin.post("/admin/accounts/pat/delete");
    assert.equal(res.status, 303);
    assert.equal((await lastAudit(app)).action, "account.delete");
    const after = await publisher.fetch("/admin");
    assert.equal(after.status, 303);
    assert.equal(after.headers.get("location"), "/admin/login");
    assert.equal((await new AdminClient(app).signIn("pat", PASSWORD)).status, 401);
  });
});

Deno.test("roles: the last admin can be neither removed nor demoted", async (t) => {
  await using app = await createAdminTestApp();
  const admin = await signedInClient(app);

  await t.step("an account stored without a role is an admin", async () => {
    const stored = (await app.kv.get<AdminUser>(adminUserKey(ADMIN_USER))).value;
    assert.equal(stored?.role, undefined);
    const { html } = await admin.page("/admin/accounts");
    assert.match(html, /data-account="admin"[\s\S]*?<td data-label="Role">admin<\/td>/);
  });

  await t.step(
    "demoting or removing the only admin: 400, the message, nothing changed",
    async () => {
      for (
        const [path, fields] of [
          ["/admin/accounts/admin/role", { role: "viewer" }],
          ["/admin/accounts/admin/delete", {}],
        ] as const
      ) {
        const res = await admin.post(path, fields);
        assert.equal(res.status, 400, path);
        assert.match(await res.text(), /last admin/, path);
        assert.equal((await getAdminUser(app.store, ADMIN_USER))?.role, undefined);
      }
      assert.equal((await admin.fetch("/admin/accounts")).status, 200);
    },
  );

  await t.step("with a second admin, the first may step down", async () => {
    await createAccount(admin, "second", "admin");
    assert.equal((await admin.post("/admin/accounts/admin/role", { role: "viewer" })).status, 303);
    assert.equal((await getAdminUser(app.store, ADMIN_USER))?.role, "viewer");
    // Now a viewer: the accounts pages are closed to it.
    assert.equal((await admin.fetch("/admin/accounts")).status, 403);
    const second = await signedInAs(app, "second");
    await second.page("/admin/accounts");
    const res = await second.post("/admin/accounts/second/delete");
    assert.equal(res.status, 400);
    assert.match(await res.text(), /last admin/);
  });

  await t.step("two admins demoting each other at once: one of them stays admin", async () => {
    assert.equal((await setAdminRole(app.store, ADMIN_USER, "admin")).after.role, "admin");
    const results = await Promise.allSettled([
      setAdminRole(app.store, ADMIN_USER, "publisher"),
      setAdminRole(app.store, "second", "publisher"),
    ]);
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    const failed = results.find((r) => r.status === "rejected");
    assert.ok(failed?.status === "rejected" && failed.reason instanceof LastAdminError);
    const roles = [
      (await getAdminUser(app.store, ADMIN_USER))?.role,
      (await getAdminUser(app.store, "second"))?.role,
    ];
    assert.deepEqual(roles.filter((role) => role === "admin").length, 1);
  });

  await t.step("bad input on the create form: 400, the form again, nothing stored", async () => {
    const stillAdmin = (await getAdminUser(app.store, "second"))?.role === "admin";
    const client = stillAdmin ? await signedInAs(app, "second") : admin;
    await client.page("/admin/accounts");
    for (
      const [fields, message] of [
        [{ username: "bad name", password: PASSWORD, role: "viewer" }, /User name must be/],
        [{ username: "shorty", password: "short", role: "viewer" }, /password must be/],
        [{ username: "norole", password: PASSWORD, role: "root" }, /choose a role/],
        [{ username: "second", password: PASSWORD, role: "viewer" }, /is taken/],
      ] as const
    ) {
      const res = await client.post("/admin/accounts", fields);
      assert.equal(res.status, 400, fields.username);
      assert.match(await res.text(), message);
    }
    assert.equal(await getAdminUser(app.store, "shorty"), null);
    assert.equal(await getAdminUser(app.store, "norole"), null);
  });
});
