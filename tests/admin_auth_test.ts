import assert from "node:assert/strict";
import { bootstrapAdmin } from "../admin/mod.ts";
import { formatEventLine } from "../src/lib/log.ts";
import { hashPassword, PBKDF2_ITERATIONS, verifyPassword } from "../src/lib/passwords.ts";
import { getAdminUser } from "../src/accounts/admin_users.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import {
  type AdminSession,
  createAdminSession,
  deleteAdminSession,
  deleteAdminSessionsOfUser,
  deleteLegacySsoSessions,
  getAdminSession,
} from "../src/accounts/sessions.ts";
import { adminSessionKey, legacySsoSessionKey, legacySsoSessionsPrefix } from "../src/kv/keys.ts";
import type { Store } from "../src/kv/store.ts";
import { sha256Hex } from "../src/lib/secrets.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  AdminClient,
  createAdminTestApp,
  signedInClient,
} from "./admin_helpers.ts";
import { testConfig, withStore } from "./helpers.ts";
import { makeDataTempDir, startServer } from "./server_process.ts";

Deno.test("admin sign-in", async (t) => {
  await using app = await createAdminTestApp();

  await t.step("the login form carries a pre-session CSRF token bound to a cookie", async () => {
    const client = new AdminClient(app);
    const { res, html } = await client.page("/admin/login");
    assert.equal(res.status, 200);
    assert.match(html, /<form method="post" action="\/admin\/login"/);
    assert.match(html, /name="username"/);
    assert.match(html, /name="password"/);
    assert.ok(client.csrfToken.length >= 40);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("uds_login_csrf="))!;
    assert.ok(cookie.includes(client.csrfToken));
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
  });

  await t.step("right credentials: 303 to /admin with a session cookie", async () => {
    const client = new AdminClient(app);
    await client.page("/admin/login");
    const res = await client.post("/admin/login", {
      username: ADMIN_USER,
      password: ADMIN_PASSWORD,
    });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin");
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("uds_session="))!;
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Lax/);
    assert.match(cookie, /Path=\/admin(;|$)/);
    assert.doesNotMatch(cookie, /Secure/);
    const dashboard = await client.fetch("/admin");
    assert.equal(dashboard.status, 200);
    // A signed-in admin who opens the login page goes to the dashboard.
    const login = await client.fetch("/admin/login");
    assert.equal(login.status, 303);
    assert.equal(login.headers.get("location"), "/admin");
  });

  await t.step("wrong password: 401, the form and the exact message, no session", async () => {
    const client = new AdminClient(app);
    client.address = "198.51.100.1";
    await client.page("/admin/login");
    const res = await client.post("/admin/login", { username: ADMIN_USER, password: "wrong" });
    assert.equal(res.status, 401);
    const html = await res.text();
    assert.match(html, /invalid username or password/);
    assert.match(html, /name="password"/);
    assert.match(html, /value="admin"/, "the entered username is kept");
    assert.ok(!client.cookies.has("uds_session"));
    const unknown = await client.post("/admin/login", { username: "nobody", password: "x" });
    assert.equal(unknown.status, 401);
    assert.match(await unknown.text(), /invalid username or password/);
  });

  await t.step("a login POST without the cookie-bound token is refused with 403", async () => {
    const client = new AdminClient(app);
    await client.page("/admin/login");
    const wrong = await client.post("/admin/login", {
      username: ADMIN_USER,
      password: ADMIN_PASSWORD,
      csrf_token: "forged",
    });
    assert.equal(wrong.status, 403);
    assert.ok(!client.cookies.has("uds_session"));
    const fresh = new AdminClient(app);
    const noCookie = await fresh.post("/admin/login", {
      username: ADMIN_USER,
      password: ADMIN_PASSWORD,
      csrf_token: client.csrfToken,
    });
    assert.equal(noCookie.status, 403);
    assert.ok(!fresh.cookies.has("uds_session"));
  });

  await t.step("sign-in and its failures are in the audit log", async () => {
    const { entries } = await listAuditEntries(app.store, { limit: 50 });
    const actions = entries.map((entry) => entry.action);
    assert.ok(actions.includes("auth.sign_in"));
    const failure = entries.find((entry) => entry.action === "auth.sign_in_failed")!;
    assert.equal(failure.address, "198.51.100.1");
    assert.ok(["admin", "unknown user n… (6 characters)"].includes(failure.actor));
  });

  await t.step(
    "a name that is no account's is recorded masked, an account's as it is",
    async () => {
      const client = new AdminClient(app);
      client.address = "198.51.100.2";
      await client.page("/admin/login");
      const typo = "Sup3r-Secret!pass";
      assert.equal(
        (await client.post("/admin/login", { username: typo, password: "" })).status,
        401,
      );
      assert.equal(
        (await client.post("/admin/login", { username: ADMIN_USER, password: "no" })).status,
        401,
      );
      const { entries } = await listAuditEntries(app.store, { limit: 50 });
      const failures = entries.filter((entry) =>
        entry.action === "auth.sign_in_failed" && entry.address === "198.51.100.2"
      );
      assert.equal(failures.length, 2);
      const [known, unknown] = failures;
      assert.equal(unknown.actor, "unknown user S… (17 characters)");
      assert.equal(unknown.target, "unknown user S… (17 characters)");
      assert.equal(known.actor, ADMIN_USER);
      assert.equal(known.target, `account "${ADMIN_USER}"`);
      for (const entry of entries) {
        assert.ok(!JSON.stringify(entry).includes("3r-Secret"), "the typed name is nowhere");
      }
      for (let i = 0; i < 5; i++) {
        await client.post("/admin/login", {
          username: typo,
          password: "",
        });
      }
      const refused = (await listAuditEntries(app.store, { limit: 50 })).entries.find((entry) =>
        entry.action === "auth.sign_in_refused" && entry.address === "198.51.100.2"
      );
      assert.equal(refused?.actor, "unknown user S… (17 characters)", "a refusal too");
      const { html } = await (await signedInClient(app)).page("/admin/audit");
      assert.ok(!html.includes("3r-Secret"), "nor on the audit page");
    },
  );
});

Deno.test("admin sign-in throttling", async (t) => {
  await using app = await createAdminTestApp();

  await t.step("per (user, address): after 5 failures that address is refused", async () => {
    const attacker = new AdminClient(app);
    attacker.address = "192.0.2.1";
    await attacker.page("/admin/login");
    for (let i = 0; i < 5; i++) {
      const res = await attacker.post("/admin/login", { username: ADMIN_USER, password: "nope" });
      assert.equal(res.status, 401);
    }
    const res = await attacker.post("/admin/login", {
      username: ADMIN_USER,
      password: ADMIN_PASSWORD,
    });
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get("retry-after")) > 0);
    assert.match(await res.text(), /Too many failed sign-ins/);
    assert.ok(!attacker.cookies.has("uds_session"));
    // The owner, elsewhere, is not locked out (issue 9.3).
    const owner = new AdminClient(app);
    owner.address = "192.0.2.99";
    assert.equal((await owner.signIn()).status, 303);
  });

  await t.step("per address: 20 failures with different names block that address", async () => {
    const client = new AdminClient(app);
    client.address = "192.0.2.200";
    await client.page("/admin/login");
    for (let i = 0; i < 20; i++) {
      const res = await client.post("/admin/login", { username: `user${i}`, password: "x" });
      assert.equal(res.status, 401, `attempt ${i}`);
    }
    const res = await client.post("/admin/login", { username: "someone", password: "x" });
    assert.equal(res.status, 429);
  });
});

Deno.test("admin sessions", async (t) => {
  await using app = await createAdminTestApp();

  await t.step("logout ends the session on the server", async () => {
    const client = await signedInClient(app);
    const sessionId = client.cookies.get("uds_session")!;
    const res = await client.post("/admin/logout");
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/login");
    assert.ok(!client.cookies.has("uds_session"));
    // Replaying the old cookie does not work any more.
    client.cookies.set("uds_session", sessionId);
    const after = await client.fetch("/admin");
    assert.equal(after.status, 303);
    assert.equal(after.headers.get("location"), "/admin/login");
  });

  await t.step("idle and absolute limits end a session", async () => {
    const policy = { idleMs: 60_000, maxMs: 3_600_000 };
    const start = Date.now();
    const { id } = await createAdminSession(app.store, { username: ADMIN_USER, address: "x" }, {
      policy,
      nowMs: start,
    });
    assert.ok(await getAdminSession(app.store, id, { policy, nowMs: start + 30_000 }));
    // 60 s after the last request the session is gone.
    assert.equal(await getAdminSession(app.store, id, { policy, nowMs: start + 90_000 }), null);

    const second = await createAdminSession(app.store, { username: ADMIN_USER, address: "x" }, {
      policy,
      nowMs: start,
    });
    // Active every 50 s: the idle limit never hits, but the absolute one does.
    let at = start;
    for (; at < start + 3_500_000; at += 50_000) {
      assert.ok(
        await getAdminSession(app.store, second.id, { policy, nowMs: at }),
        `alive at +${at - start}`,
      );
    }
    assert.equal(
      await getAdminSession(app.store, second.id, { policy, nowMs: start + 3_600_000 }),
      null,
    );
  });

  await t.step("a session record of the older shape (no sso part) is signed out", async () => {
    const client = await signedInClient(app);
    const sessionId = client.cookies.get("uds_session")!;
    const key = adminSessionKey(sha256Hex(sessionId));
    const { sso: _, ...older } = (await app.store.kv.get<AdminSession>(key)).value!;
    await app.store.kv.set(key, older);
    const res = await client.fetch("/admin");
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/login");
    assert.equal((await app.store.kv.get(key)).value, null);
  });

  await t.step("a session touch is written at most once a minute", async () => {
    const policy = { idleMs: 600_000, maxMs: 3_600_000 };
    const start = Date.now();
    const { id, session } = await createAdminSession(
      app.store,
      { username: ADMIN_USER, address: "x" },
      { policy, nowMs: start },
    );
    const seen = await getAdminSession(app.store, id, { policy, nowMs: start + 30_000 });
    assert.equal(seen?.last_seen_at, session.last_seen_at);
    const touched = await getAdminSession(app.store, id, { policy, nowMs: start + 61_000 });
    assert.equal(touched?.last_seen_at, start + 61_000);
  });

  await t.step("the cookie is Secure when the base URL is https", async () => {
    await using https = await createAdminTestApp({
      baseUrl: "https://updates.example",
      https: true,
    });
    const client = new AdminClient(https);
    const res = await client.signIn();
    assert.equal(res.status, 303);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("uds_session="))!;
    assert.match(cookie, /; Secure/);
  });
});

const LEGACY_POLICY = { idleMs: 600_000, maxMs: 3_600_000 };
const LEGACY_PART = { subject: "s", refresh_token: "a refresh token", access_token: "a token" };

/** A session of the older shape (no `sso`) with its provider side kept apart. */
async function olderSession(store: Store, username: string): Promise<string> {
  const { id } = await createAdminSession(store, { username, address: "127.0.0.1" }, {
    policy: LEGACY_POLICY,
  });
  const key = adminSessionKey(sha256Hex(id));
  const { sso: _, ...older } = (await store.kv.get<AdminSession>(key)).value!;
  await store.kv.set(key, older, { expireIn: LEGACY_POLICY.idleMs });
  await store.kv.set(legacySsoSessionKey(sha256Hex(id)), LEGACY_PART, {
    expireIn: LEGACY_POLICY.maxMs,
  });
  return id;
}

/** The provider side kept apart for session `id`, or null. */
async function legacyLeft(store: Store, id: string): Promise<unknown> {
  return (await store.kv.get(legacySsoSessionKey(sha256Hex(id)))).value;
}

Deno.test("the provider's tokens an older layout kept apart leave the KV", async (t) => {
  await t.step("ended at its next request", async () => {
    await withStore(async (store) => {
      const id = await olderSession(store, "admin");
      assert.deepEqual(await legacyLeft(store, id), LEGACY_PART);
      assert.equal(await getAdminSession(store, id, { policy: LEGACY_POLICY }), null);
      assert.equal(await legacyLeft(store, id), null);
    });
  });

  await t.step("ended by sign-out and by ending a user's sessions", async () => {
    await withStore(async (store) => {
      const signedOut = await olderSession(store, "admin");
      await deleteAdminSession(store, signedOut, "admin");
      assert.equal(await legacyLeft(store, signedOut), null);
      const ids = [await olderSession(store, "admin"), await olderSession(store, "admin")];
      assert.equal(await deleteAdminSessionsOfUser(store, "admin"), 2);
      for (const id of ids) assert.equal(await legacyLeft(store, id), null);
    });
  });

  await t.step(
    "every one deleted at start (more than a commit holds), other entries kept",
    async () => {
      await withStore(async (store) => {
        const { id } = await createAdminSession(
          store,
          { username: "admin", address: "127.0.0.1" },
          {
            policy: LEGACY_POLICY,
          },
        );
        for (let i = 0; i < 250; i++) {
          await store.kv.set(legacySsoSessionKey(sha256Hex(`old ${i}`)), LEGACY_PART, {
            expireIn: LEGACY_POLICY.maxMs,
          });
        }
        assert.equal(await deleteLegacySsoSessions(store), 250);
        const left = await Array.fromAsync(store.kv.list({ prefix: legacySsoSessionsPrefix() }));
        assert.deepEqual(left, []);
        assert.notEqual(await getAdminSession(store, id, { policy: LEGACY_POLICY }), null);
        assert.equal(await deleteLegacySsoSessions(store), 0);
      });
    },
  );
});

Deno.test({
  name: "the service's start deletes the provider's tokens an older layout kept apart",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const dataDir = await makeDataTempDir("legacy-sso");
  try {
    const kv = await Deno.openKv(`${dataDir}/kv.sqlite3`);
    for (let i = 0; i < 3; i++) {
      await kv.set(legacySsoSessionKey(sha256Hex(`old ${i}`)), LEGACY_PART, {
        expireIn: LEGACY_POLICY.maxMs,
      });
    }
    kv.close();
    {
      await using server = await startServer(dataDir, { APP_ADMIN_PASSWORD: ADMIN_PASSWORD });
      assert.match(server.output(), /old SSO session entries deleted.*"deleted":3/);
    }
    const after = await Deno.openKv(`${dataDir}/kv.sqlite3`);
    const left = await Array.fromAsync(after.list({ prefix: legacySsoSessionsPrefix() }));
    after.close();
    assert.deepEqual(left, []);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("admin password change", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);
  const other = await signedInClient(app);

  await t.step("the page has the form", async () => {
    const { res, html } = await client.page("/admin/account/password");
    assert.equal(res.status, 200);
    assert.match(html, /name="current_password"/);
    assert.match(html, /name="new_password"/);
  });

  await t.step("wrong current password, short or mismatched new one: 400", async () => {
    const wrong = await client.post("/admin/account/password", {
      current_password: "nope",
      new_password: "a new long password",
      confirm_password: "a new long password",
    });
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /current password is wrong/);
    const short = await client.post("/admin/account/password", {
      current_password: ADMIN_PASSWORD,
      new_password: "short",
      confirm_password: "short",
    });
    assert.equal(short.status, 400);
    const mismatch = await client.post("/admin/account/password", {
      current_password: ADMIN_PASSWORD,
      new_password: "a new long password",
      confirm_password: "another long password",
    });
    assert.equal(mismatch.status, 400);
    const user = await getAdminUser(app.store, ADMIN_USER);
    assert.ok(await verifyPassword(ADMIN_PASSWORD, user!.password_hash));
  });

  await t.step("success: 303, new password works, other sessions end", async () => {
    const res = await client.post("/admin/account/password", {
      current_password: ADMIN_PASSWORD,
      new_password: "a new long password",
      confirm_password: "a new long password",
    });
    assert.equal(res.status, 303);
    assert.equal((await client.fetch("/admin")).status, 200, "this session stays");
    assert.equal((await other.fetch("/admin")).status, 303, "other sessions end");
    const fresh = new AdminClient(app);
    fresh.address = "192.0.2.50";
    assert.equal((await fresh.signIn(ADMIN_USER, ADMIN_PASSWORD)).status, 401);
    assert.equal((await fresh.signIn(ADMIN_USER, "a new long password")).status, 303);
  });
});

Deno.test("passwords are PBKDF2-SHA256 with a per-user salt", async () => {
  const a = await hashPassword("same password");
  const b = await hashPassword("same password");
  assert.notEqual(a, b);
  assert.match(a, new RegExp(`^pbkdf2-sha256\\$${PBKDF2_ITERATIONS}\\$`));
  assert.ok(PBKDF2_ITERATIONS >= 600_000);
  assert.ok(await verifyPassword("same password", a));
  assert.ok(!(await verifyPassword("other password", a)));
  assert.ok(!(await verifyPassword("same password", "garbage")));
});

Deno.test("the first admin is created at start", async (t) => {
  await t.step("with a generated password, printed once", () =>
    withStore(async (store) => {
      const config = testConfig({ adminUsername: "root", adminPassword: undefined });
      const lines: string[] = [];
      assert.equal(await bootstrapAdmin(store, config, (line) => lines.push(line)), "created");
      assert.equal(lines.length, 1);
      const password = /generated password: (\S+)$/.exec(lines[0])![1];
      assert.ok(password.length >= 20);
      // One readable line: in the JSON log it shows no literal "\n".
      assert.ok(!lines[0].includes("\n"));
      const json = formatEventLine(
        { time: "2026-01-01T00:00:00Z", level: "warn", message: lines[0], fields: {} },
        "json",
      );
      assert.ok(!json.includes("\\n"), json);
      assert.match(json, /sign in at http:\/\/[^ ]+\/admin and change the password/);
      const user = await getAdminUser(store, "root");
      assert.ok(await verifyPassword(password, user!.password_hash));
      assert.equal(await bootstrapAdmin(store, config, (line) => lines.push(line)), "exists");
      assert.equal(lines.length, 1, "never printed again");
    }));

  await t.step(
    "from APP_ADMIN_PASSWORD, never overwriting an existing admin",
    () =>
      withStore(async (store) => {
        const lines: string[] = [];
        const config = testConfig({ adminUsername: "boss", adminPassword: "from the environment" });
        await bootstrapAdmin(store, config, (line) => lines.push(line));
        assert.doesNotMatch(lines.join("\n"), /from the environment/, "the password is not logged");
        const user = await getAdminUser(store, "boss");
        assert.ok(await verifyPassword("from the environment", user!.password_hash));
        await bootstrapAdmin(store, { ...config, adminPassword: "changed" }, () => {});
        const again = await getAdminUser(store, "boss");
        assert.equal(again!.password_hash, user!.password_hash);
      }),
  );
});

Deno.test("admin settings are validated at start", async () => {
  const { ConfigError, loadConfig } = await import("../src/lib/config.ts");
  const defaults = loadConfig({});
  assert.equal(defaults.adminSessionIdleMinutes, 60);
  assert.equal(defaults.adminSessionMaxHours, 12);
  assert.equal(defaults.adminUsername, "admin");
  const set = loadConfig({
    APP_ADMIN_SESSION_IDLE_MINUTES: "15",
    APP_ADMIN_SESSION_MAX_HOURS: "2",
  });
  assert.equal(set.adminSessionIdleMinutes, 15);
  assert.equal(set.adminSessionMaxHours, 2);
  for (
    const [name, value] of [
      ["APP_ADMIN_SESSION_IDLE_MINUTES", "0"],
      ["APP_ADMIN_SESSION_IDLE_MINUTES", "soon"],
      ["APP_ADMIN_SESSION_MAX_HOURS", "-1"],
      ["APP_ADMIN_USERNAME", "bad name"],
    ]
  ) {
    assert.throws(() => loadConfig({ [name]: value }), (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, new RegExp(name));
      return true;
    });
  }
});
