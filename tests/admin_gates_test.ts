/** Every admin route: sign-in required, CSRF token required, browser origin checked. */
import assert from "node:assert/strict";
import type { TestApp } from "./helpers.ts";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import {
  ADMIN_PASSWORD,
  AdminClient,
  createAdminTestApp,
  type Fields,
  signedInClient,
} from "./admin_helpers.ts";
import { type AdminRoute, adminRoutes, stateSnapshot, TOKEN_GATED_PREFIX } from "./admin_routes.ts";
import { seedPublishToken } from "./publish_helpers.ts";
import { createAdminAccount } from "../src/accounts/admin_users.ts";

/** What works without a session; every other registered admin route must refuse. */
const PUBLIC_ROUTES = new Set(["GET /admin/login", "POST /admin/login", "GET /admin/static/:name"]);

/** Fields that would make a POST succeed with a valid token, so a missing gate shows as a change. */
const SUCCEEDING_FIELDS: Record<string, Fields> = {
  "/admin/projects": { name: "Beta", slug: "beta", description: "", tags: "x" },
  "/admin/projects/:slug": { name: "Renamed", description: "d", tags: "y" },
  "/admin/projects/:slug/releases": { version: "9.9.9" },
  "/admin/api-keys": { name: "k", scope_mode: "all_projects", can_download: "on" },
  "/admin/publish-tokens": { name: "ci", all_projects: "on", can_upload: "on" },
  "/admin/accounts": { username: "mallory", password: "a long enough password", role: "admin" },
  "/admin/accounts/:username/role": { role: "viewer" },
  "/admin/account/password": {
    current_password: ADMIN_PASSWORD,
    new_password: "a long new password",
    confirm_password: "a long new password",
  },
};

/**
 * The publishing API's routes (src/publishing/api/mod.ts, TOKEN_GATED_PREFIX) have no session and
 * no CSRF token: their gate is the publish token (a bearer header a browser never sends by
 * itself). They are checked against that gate below, not the session's.
 */
function gatedRoutes(routes: AdminRoute[]): AdminRoute[] {
  return routes.filter((route) =>
    !PUBLIC_ROUTES.has(`${route.method} ${route.pattern}`) &&
    !route.pattern.startsWith(TOKEN_GATED_PREFIX)
  );
}

/** The same form urlencoded and as multipart with a file, so both body readers face the gates. */
function bodiesOf(fields: Fields, token: string | undefined): Array<[string, BodyInit]> {
  const all: Fields = token === undefined ? fields : { csrf_token: token, ...fields };
  const urlencoded = new URLSearchParams();
  const multipart = new FormData();
  for (const [name, value] of Object.entries(all)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      urlencoded.append(name, item);
      multipart.append(name, item);
    }
  }
  multipart.append("file", new File(["bytes"], "x.bin"));
  return [["urlencoded", urlencoded], ["multipart", multipart]];
}

/** All durable state except sessions (which only record activity). */
function snapshot(t: TestApp): Promise<string> {
  return stateSnapshot(t, ["admin_sessions"]);
}

/** Seeds a project, a release and a key whose ids the routes' parameters take. */
async function seed(t: TestApp) {
  const project = await seedProject(t, { slug: "alpha", name: "Alpha", tags: ["one"] });
  const release = await seedRelease(t, project.id, "1.0.0");
  const { apiKey } = await seedKey(t);
  const { token } = await seedPublishToken(t.store);
  await createAdminAccount(t.store, { username: "pat", passwordHash: "x", role: "publisher" });
  return { releaseId: release.id, keyId: apiKey.id, tokenId: token.id, username: "pat" };
}

Deno.test("every admin route the app registers is behind the gates", async (t) => {
  await using app = await createAdminTestApp();
  const routes = adminRoutes(app, await seed(app));
  const gated = gatedRoutes(routes);

  await t.step("the list is the app's own and complete", () => {
    const names = routes.map((route) => `${route.method} ${route.pattern}`);
    for (const known of [...PUBLIC_ROUTES, "GET /admin", "POST /admin/logout"]) {
      assert.ok(names.includes(known), `${known} is registered`);
    }
    assert.ok(names.includes("POST /admin/projects/:slug/releases"), "the upload is listed");
    assert.ok(gated.length >= 18, `found ${gated.length} gated routes`);
    for (const pattern of Object.keys(SUCCEEDING_FIELDS)) {
      assert.ok(names.includes(`POST ${pattern}`), `fixture for a registered route: ${pattern}`);
    }
  });

  await t.step("the public routes answer without a session", async () => {
    const anonymous = new AdminClient(app);
    const open = routes.filter((r) => r.method === "GET" && PUBLIC_ROUTES.has(`GET ${r.pattern}`));
    assert.ok(open.length >= 2);
    for (const route of open) {
      assert.equal((await anonymous.fetch(route.path)).status, 200, route.path);
    }
  });

  await t.step(
    "without a session: GET 303 to /admin/login, POST refused, nothing changed",
    async () => {
      const anonymous = new AdminClient(app);
      const before = await snapshot(app);
      for (const route of gated) {
        const label = `${route.method} ${route.pattern}`;
        if (route.method === "GET") {
          const res = await anonymous.fetch(route.path);
          assert.equal(res.status, 303, label);
          assert.equal(res.headers.get("location"), "/admin/login", label);
          continue;
        }
        for (const [encoding, body] of bodiesOf(SUCCEEDING_FIELDS[route.pattern] ?? {}, "any")) {
          const res = await anonymous.fetch(route.path, { method: route.method, body });
          await res.body?.cancel();
          if (res.status === 303) {
            assert.equal(res.headers.get("location"), "/admin/login", `${label} ${encoding}`);
          } else {
            assert.ok([401, 403].includes(res.status), `${label} ${encoding}: ${res.status}`);
          }
        }
      }
      assert.equal(await snapshot(app), before);
    },
  );

  await t.step(
    "the publishing API's routes: 401 JSON without a publish token, even signed in",
    async () => {
      const tokenRoutes = routes.filter((route) => route.pattern.startsWith(TOKEN_GATED_PREFIX));
      assert.ok(tokenRoutes.length >= 5, `found ${tokenRoutes.length} token-gated routes`);
      const signedIn = await signedInClient(app);
      const before = await snapshot(app);
      for (const client of [new AdminClient(app), signedIn]) {
        for (const route of tokenRoutes) {
          const label = `${route.method} ${route.pattern}`;
          const bodies = route.method === "GET"
            ? [undefined]
            : bodiesOf({ version: "9.9.9", release_notes: "x" }, signedIn.csrfToken).map(([, b]) =>
              b
            );
          for (const body of bodies) {
            const res = await client.fetch(route.path, { method: route.method, body });
            assert.equal(res.status, 401, label);
            assert.match(res.headers.get("content-type") ?? "", /^application\/json/, label);
            assert.deepEqual(await res.json(), { error: "missing bearer publish token" }, label);
          }
        }
      }
      assert.equal(await snapshot(app), before);
    },
  );

  await t.step("a forged or stale session cookie is no session", async () => {
    const anonymous = new AdminClient(app);
    anonymous.cookies.set("uds_session", "A".repeat(43));
    const res = await anonymous.fetch("/admin");
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/login");
  });

  const client = await signedInClient(app);
  const other = await signedInClient(app);
  assert.notEqual(client.csrfToken, other.csrfToken);
  for (
    const [label, token] of [
      ["missing", undefined],
      ["empty", ""],
      ["wrong", "wrong-token"],
      ["another session's", other.csrfToken],
    ] as const
  ) {
    await t.step(
      `with a session, ${label} CSRF token: every POST 403, nothing changed`,
      async () => {
        const before = await snapshot(app);
        for (const route of gated.filter((r) => r.method === "POST")) {
          for (const [encoding, body] of bodiesOf(SUCCEEDING_FIELDS[route.pattern] ?? {}, token)) {
            const res = await client.fetch(route.path, { method: "POST", body });
            assert.equal(res.status, 403, `${route.pattern} ${encoding}`);
            assert.match(await res.text(), /security token/, `${route.pattern} ${encoding}`);
          }
        }
        assert.equal(await snapshot(app), before);
        // Still signed in: a refused form does not end the session.
        assert.equal((await client.fetch("/admin")).status, 200);
      },
    );
  }

  await t.step("control: with the token, the same requests do change things", async () => {
    const before = await snapshot(app);
    const res = await client.post("/admin/projects", SUCCEEDING_FIELDS["/admin/projects"]);
    assert.equal(res.status, 303);
    assert.notEqual(await snapshot(app), before);
  });
});

Deno.test("admin POSTs check the browser's origin headers", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);

  await t.step("cross-site requests are refused even with the right token", async () => {
    const before = await snapshot(app);
    const variants: Array<Record<string, string>> = [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { origin: "https://evil.example" },
      { origin: "null" },
    ];
    for (const headers of variants) {
      const res = await client.post("/admin/projects", { name: "Evil", slug: "evil" }, headers);
      assert.equal(res.status, 403, JSON.stringify(headers));
    }
    assert.equal(await snapshot(app), before);
  });

  await t.step("same-origin browser posts pass (Origin: null under no-referrer)", async () => {
    const res = await client.post("/admin/projects", { name: "Ok", slug: "ok-1" }, {
      "sec-fetch-site": "same-origin",
      origin: "null",
    });
    assert.equal(res.status, 303);
    const byOrigin = await client.post("/admin/projects", { name: "Ok", slug: "ok-2" }, {
      origin: new URL(app.config.baseUrl).origin,
    });
    assert.equal(byOrigin.status, 303);
  });
});
