/** Every admin route: sign-in required, CSRF token required, browser origin checked. */
import assert from "node:assert/strict";
import type { TestApp } from "./helpers.ts";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import {
  AdminClient,
  createAdminTestApp,
  type Fields,
  listArtifactFiles,
  signedInClient,
} from "./admin_helpers.ts";

const GET_ROUTES = [
  "/admin",
  "/admin/projects",
  "/admin/projects/alpha",
  "/admin/api-keys",
  "/admin/audit",
  "/admin/account/password",
];

/** Each POST route with fields that would succeed with a valid token. */
function postRoutes(releaseId: number, keyId: number): Array<[string, Fields]> {
  return [
    ["/admin/projects", { name: "Beta", slug: "beta", description: "", tags: "x" }],
    ["/admin/projects/alpha", { name: "Renamed", description: "d", tags: "y" }],
    ["/admin/projects/alpha/archive", {}],
    ["/admin/projects/alpha/activate", {}],
    [`/admin/releases/${releaseId}/archive`, {}],
    [`/admin/releases/${releaseId}/activate`, {}],
    ["/admin/api-keys", { name: "k", scope_mode: "all_projects", can_download: "on" }],
    [`/admin/api-keys/${keyId}/disable`, {}],
    [`/admin/api-keys/${keyId}/enable`, {}],
    ["/admin/account/password", {
      current_password: "x",
      new_password: "a long new password",
      confirm_password: "a long new password",
    }],
    ["/admin/logout", {}],
  ];
}

/** All durable state except sessions (which only record activity). */
async function snapshot(t: TestApp): Promise<string> {
  const rows: unknown[] = [];
  for await (const entry of t.kv.list({ prefix: [] })) {
    const root = String(entry.key[0]);
    if (root.startsWith("admin_sessions")) continue;
    rows.push([entry.key, entry.value]);
  }
  return JSON.stringify(
    [rows, await listArtifactFiles(t)],
    (_, v) => typeof v === "bigint" ? String(v) : v,
  );
}

async function seeded() {
  const t = await createAdminTestApp();
  const project = await seedProject(t, { slug: "alpha", name: "Alpha", tags: ["one"] });
  const release = await seedRelease(t, project.id, "1.0.0");
  const { apiKey } = await seedKey(t);
  return { t, releaseId: release.id, keyId: apiKey.id };
}

Deno.test("admin routes need a session", async (t) => {
  const { t: app, releaseId, keyId } = await seeded();
  const anonymous = new AdminClient(app);

  await t.step("GET answers 303 to /admin/login", async () => {
    for (const path of GET_ROUTES) {
      const res = await anonymous.fetch(path);
      assert.equal(res.status, 303, path);
      assert.equal(res.headers.get("location"), "/admin/login", path);
    }
  });

  await t.step("POST answers 303 to /admin/login and changes nothing", async () => {
    const before = await snapshot(app);
    for (const [path, fields] of postRoutes(releaseId, keyId)) {
      const res = await anonymous.post(path, { ...fields, csrf_token: "anything" });
      assert.equal(res.status, 303, path);
      assert.equal(res.headers.get("location"), "/admin/login", path);
    }
    const upload = await anonymous.upload("/admin/projects/alpha/releases", [
      ["csrf_token", "anything"],
      ["version", "9.9.9"],
      ["file", new File(["bytes"], "x.bin")],
    ]);
    assert.equal(upload.status, 303);
    assert.equal(await snapshot(app), before);
  });

  await t.step("a forged or stale session cookie is no session", async () => {
    anonymous.cookies.set("uds_session", "A".repeat(43));
    const res = await anonymous.fetch("/admin");
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/login");
  });

  await app.close();
});

Deno.test("admin POSTs need the session's CSRF token", async (t) => {
  const { t: app, releaseId, keyId } = await seeded();
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
    await t.step(`${label} token: 403 and nothing changed`, async () => {
      const before = await snapshot(app);
      for (const [path, fields] of postRoutes(releaseId, keyId)) {
        const body: Fields = { ...fields };
        const res = token === undefined
          ? await client.fetch(path, {
            method: "POST",
            body: new URLSearchParams(body as Record<string, string>),
          })
          : await client.post(path, { ...body, csrf_token: token });
        assert.equal(res.status, 403, `${path}`);
        assert.match(await res.text(), /security token/, path);
      }
      const parts: Array<[string, string | File]> = [
        ["version", "9.9.9"],
        ["file", new File(["bytes"], "x.bin")],
      ];
      if (token !== undefined) parts.unshift(["csrf_token", token]);
      const upload = await client.upload("/admin/projects/alpha/releases", parts);
      assert.equal(upload.status, 403);
      assert.equal(await snapshot(app), before);
      // Still signed in: a refused form does not end the session.
      assert.equal((await client.fetch("/admin")).status, 200);
    });
  }

  await app.close();
});

Deno.test("admin POSTs check the browser's origin headers", async (t) => {
  const { t: app } = await seeded();
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

  await app.close();
});
