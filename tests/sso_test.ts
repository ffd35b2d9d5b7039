/**
 * Sign-in through an OpenID Connect provider (docs/sso.md), in process against a real provider
 * (tests/oidc_provider.ts): roles from groups, the refusals of a bad answer (tampered, expired or
 * foreign ID tokens, a wrong state, a replayed code), group removal at the session check, key
 * rotation, local passwords off with the break-glass sign-in, sign-out at the provider, and
 * settings that stop the start. The same flows in Chromium: tests/sso_browser_test.ts.
 */
import assert from "node:assert/strict";
import { freePort } from "../bench/process.ts";
import { AdminClient, createAdminTestApp } from "./admin_helpers.ts";
import { lastAudit, sleep, type TestApp } from "./helpers.ts";
import {
  CLIENT_ID,
  oidcSettings,
  signInAtProvider,
  startTestProvider,
  type TestProvider,
} from "./oidc_provider.ts";
import { ConfigError, loadConfig, type OidcConfig } from "../src/lib/config.ts";
import { fromBase64Url, sha256Hex } from "../src/lib/secrets.ts";
import { createSso, type ProviderFetch } from "../src/sso/mod.ts";
import { createAdminAccount, getAdminUser, roleOf } from "../src/accounts/admin_users.ts";
import type { AdminSession } from "../src/accounts/sessions.ts";
import { adminSessionKey } from "../src/kv/keys.ts";

const BASE_URL = "http://localhost:8000";

/** Rewrites the ID token of token endpoint answers (null: leave it). */
type Tamper = (idToken: string) => Promise<string> | string;

async function appWith(
  provider: TestProvider,
  { settings = {}, tamper }: { settings?: Partial<OidcConfig>; tamper?: { fn: Tamper | null } } =
    {},
): Promise<TestApp> {
  const config = { baseUrl: BASE_URL, ...oidcSettings(provider, settings) };
  const fetch: ProviderFetch = async (url, options) => {
    const res = await globalThis.fetch(url, options as RequestInit);
    if (tamper?.fn == null || !url.endsWith("/token")) return res;
    const body = await res.json();
    if (typeof body.id_token === "string") body.id_token = await tamper.fn(body.id_token);
    return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
  };
  return await createAdminTestApp(config, {
    sso: (store, appConfig) =>
      createSso({
        store,
        settings: appConfig.oidc!,
        redirectUri: `${BASE_URL}/admin/login/sso/callback`,
        fetch,
      }),
  });
}

/** The callback URL (path and query) the provider sends `login` back to. */
async function providerAnswer(client: AdminClient, login: string): Promise<string> {
  const start = await client.fetch("/admin/login/sso");
  assert.equal(start.status, 303);
  const back = await signInAtProvider(start.headers.get("location")!, login);
  assert.equal(back.origin + back.pathname, `${BASE_URL}/admin/login/sso/callback`);
  return back.pathname + back.search;
}

/** Signs `login` in through the provider; the callback's answer. */
async function ssoSignIn(client: AdminClient, login: string): Promise<Response> {
  return await client.fetch(await providerAnswer(client, login));
}

function payloadOf(jwt: string): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(fromBase64Url(jwt.split(".")[1])));
}

function headerOf(jwt: string): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(fromBase64Url(jwt.split(".")[0])));
}

Deno.test("admin sign-in through an OpenID Connect provider", async (t) => {
  await using provider = await startTestProvider([BASE_URL]);
  provider.users.set("alice", ["staff", "uds-admins"]);
  provider.users.set("victor", ["uds-viewers"]);
  provider.users.set("nobody", ["staff"]);
  const tamper: { fn: Tamper | null } = { fn: null };
  await using app = await appWith(provider, { tamper });

  await t.step("the sign-in page offers the provider beside the password form", async () => {
    const html = await (await new AdminClient(app).fetch("/admin/login")).text();
    assert.match(html, /Sign in with Test IdP/);
    assert.match(html, /id="password"/);
  });

  await t.step(
    "a user in the admins' group signs in as admin; the audit names the provider",
    async () => {
      const client = new AdminClient(app);
      const res = await ssoSignIn(client, "alice");
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), "/admin");
      assert.equal((await client.fetch("/admin/accounts")).status, 200);
      const user = await getAdminUser(app.store, "alice");
      assert.equal(roleOf(user!), "admin");
      const entry = await lastAudit(app);
      assert.equal(entry.action, "auth.sign_in");
      assert.equal(entry.actor, "alice");
      assert.match(entry.details, /Test IdP \(http:\/\/127\.0\.0\.1:\d+\), subject "alice"/);
      assert.match(entry.details, /account created as admin/);
    },
  );

  await t.step("a viewer signs in as viewer and cannot open admin pages", async () => {
    const client = new AdminClient(app);
    assert.equal((await ssoSignIn(client, "victor")).status, 303);
    assert.equal(roleOf((await getAdminUser(app.store, "victor"))!), "viewer");
    assert.equal((await client.fetch("/admin")).status, 200);
    assert.equal((await client.fetch("/admin/accounts")).status, 403);
  });

  await t.step("a user in no mapped group is refused with a page that says why", async () => {
    const client = new AdminClient(app);
    const res = await ssoSignIn(client, "nobody");
    assert.equal(res.status, 403);
    const html = await res.text();
    assert.match(html, /You cannot sign in here/);
    assert.match(html, /&quot;nobody&quot; at Test IdP is in no group that gives a role here/);
    assert.match(html, /your groups \(staff\)/);
    // Plain words for the person; the settings' names are for operators (log and audit).
    assert.doesNotMatch(html, /APP_OIDC/);
    // The way on signs out at the provider first, back to the sign-in page.
    assert.match(html, /Sign out at Test IdP, then sign in again/);
    assert.match(html, /session\/end\?[^"]*post_logout_redirect_uri=http%3A%2F%2Flocalhost/);
    assert.equal(await getAdminUser(app.store, "nobody"), null);
    assert.equal((await client.fetch("/admin")).status, 303);
    const entry = await lastAudit(app);
    assert.equal(entry.action, "auth.sign_in_refused");
    assert.match(entry.details, /APP_OIDC_ADMIN_GROUPS/);
  });

  await t.step("a provider user named like a local account is refused", async () => {
    provider.users.set("bob", ["uds-admins"]);
    await createAdminAccount(app.store, { username: "bob", passwordHash: "x", role: "viewer" });
    const res = await ssoSignIn(new AdminClient(app), "bob");
    assert.equal(res.status, 403);
    assert.match(await res.text(), /&quot;bob&quot; is a local account with a password here/);
    assert.equal(roleOf((await getAdminUser(app.store, "bob"))!), "viewer");
  });

  await t.step("a wrong state is refused", async () => {
    const client = new AdminClient(app);
    const answer = await providerAnswer(client, "alice");
    // Another browser (without this sign-in's state cookie) brings the answer back.
    const other = new AdminClient(app);
    const res = await other.fetch(answer);
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /does not belong to a sign-in started in this browser/);
    assert.doesNotMatch(html, /state/);
    assert.match((await lastAudit(app)).details, /state does not match/);
    // The state in the answer changed.
    const changed = answer.replace(/state=[^&]+/, "state=somethingelse");
    const res2 = await client.fetch(changed);
    assert.equal(res2.status, 400);
    assert.equal((await client.fetch("/admin")).status, 303);
  });

  await t.step("a replayed code is refused", async () => {
    const client = new AdminClient(app);
    const answer = await providerAnswer(client, "alice");
    const state = client.cookies.get("uds_oidc_state")!;
    assert.equal((await client.fetch(answer)).status, 303);
    // The same answer again: the sign-in it belonged to is used up.
    const replay = new AdminClient(app);
    replay.cookies.set("uds_oidc_state", state);
    const res = await replay.fetch(answer);
    assert.equal(res.status, 400);
    assert.match(await res.text(), /already completed or has expired/);
    // The code in a fresh sign-in of this browser: the provider refuses it (a page, not a 500).
    const fresh = await replay.fetch("/admin/login/sso");
    const newState = new URL(fresh.headers.get("location")!).searchParams.get("state")!;
    const code = new URL(answer, BASE_URL).searchParams.get("code")!;
    const res2 = await replay.fetch(
      `/admin/login/sso/callback?code=${code}&state=${newState}&iss=${
        encodeURIComponent(provider.issuer)
      }`,
    );
    assert.equal(res2.status, 403);
    const html2 = await res2.text();
    assert.match(html2, /Test IdP did not confirm who you are/);
    assert.doesNotMatch(html2, /invalid_grant/);
    assert.match((await lastAudit(app)).details, /invalid_grant/);
    assert.equal((await replay.fetch("/admin")).status, 303);
  });

  await t.step("an error answered by the provider is a page", async () => {
    const client = new AdminClient(app);
    const start = await client.fetch("/admin/login/sso");
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const res = await client.fetch(
      `/admin/login/sso/callback?error=access_denied&error_description=nope&state=${state}&iss=${
        encodeURIComponent(provider.issuer)
      }`,
    );
    assert.equal(res.status, 403);
    assert.doesNotMatch(await res.text(), /access_denied/);
    assert.match((await lastAudit(app)).details, /access_denied/);
  });

  const refusedWith = async (fn: Tamper, expected: RegExp) => {
    tamper.fn = fn;
    try {
      const client = new AdminClient(app);
      const res = await ssoSignIn(client, "alice");
      const html = await res.text();
      assert.equal(res.status, 403, html);
      assert.match(html, /Test IdP did not confirm who you are/);
      assert.doesNotMatch(html, /JWT|signature|failed a check/i);
      assert.match((await lastAudit(app)).details, expected);
      assert.equal((await client.fetch("/admin")).status, 303);
    } finally {
      tamper.fn = null;
    }
  };

  await t.step("a tampered ID token is refused", async () => {
    await refusedWith((jwt) => {
      const [header, , signature] = jwt.split(".");
      const payload = { ...payloadOf(jwt), sub: "mallory", preferred_username: "mallory" };
      const encoded = btoa(JSON.stringify(payload)).replace(/=+$/, "").replace(/\+/g, "-")
        .replace(/\//g, "_");
      return `${header}.${encoded}.${signature}`;
    }, /failed a check.*signature/i);
  });

  await t.step("an expired ID token is refused", async () => {
    const now = Math.floor(Date.now() / 1000);
    await refusedWith(
      (jwt) => provider.signIdToken({ ...payloadOf(jwt), iat: now - 7200, exp: now - 3600 }),
      /failed a check.*exp/i,
    );
  });

  await t.step("an ID token for another audience is refused", async () => {
    await refusedWith(
      (jwt) => provider.signIdToken({ ...payloadOf(jwt), aud: "another-client" }),
      /failed a check.*aud/i,
    );
  });

  await t.step("a rotated signing key is followed", async () => {
    const seen: string[] = [];
    tamper.fn = (jwt) => {
      seen.push(String(headerOf(jwt).kid));
      return jwt;
    };
    try {
      assert.equal((await ssoSignIn(new AdminClient(app), "alice")).status, 303);
      await provider.rotateKey();
      const jwksBefore = provider.requests.filter((path) => path === "/jwks").length;
      const client = new AdminClient(app);
      assert.equal((await ssoSignIn(client, "alice")).status, 303);
      assert.equal((await client.fetch("/admin/accounts")).status, 200);
      assert.equal(seen.length, 2);
      assert.notEqual(seen[0], seen[1], "the second ID token is signed with the new key");
      assert.ok(provider.requests.filter((path) => path === "/jwks").length > jwksBefore);
    } finally {
      tamper.fn = null;
    }
  });

  await t.step("sign-out ends the session here and at the provider", async () => {
    const client = new AdminClient(app);
    assert.equal((await ssoSignIn(client, "alice")).status, 303);
    await client.page("/admin");
    const res = await client.post("/admin/logout");
    assert.equal(res.status, 200);
    const refresh = /^0; url=(.+)$/.exec(res.headers.get("refresh") ?? "");
    assert.ok(refresh, "the page goes on to the provider");
    assert.match(await res.text(), /Continue to Test IdP/);
    const location = new URL(refresh[1]);
    assert.equal(location.origin, provider.issuer);
    assert.equal(location.searchParams.get("client_id"), CLIENT_ID);
    assert.ok(location.searchParams.get("id_token_hint"));
    assert.equal(location.searchParams.get("post_logout_redirect_uri"), `${BASE_URL}/admin/login`);
    assert.equal((await client.fetch("/admin")).status, 303);
    assert.equal((await lastAudit(app)).action, "auth.sign_out");
  });

  await t.step("a local password still signs in beside the provider", async () => {
    const client = new AdminClient(app);
    assert.equal((await client.signIn()).status, 303);
  });

  await t.step("an SSO account has no password that signs in", async () => {
    const client = new AdminClient(app);
    assert.equal((await client.signIn("alice", "sso$0$$")).status, 401);
  });
});

/** How many KV entries each key prefix that names sessions holds, by that prefix. */
async function sessionEntries(app: TestApp): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for await (const entry of app.store.kv.list({ prefix: [] })) {
    const prefix = String(entry.key[0]);
    if (/session/.test(prefix)) counts[prefix] = (counts[prefix] ?? 0) + 1;
  }
  return counts;
}

Deno.test("a sign-in through the provider writes one session record; sign-out leaves none", async () => {
  await using provider = await startTestProvider([BASE_URL]);
  provider.users.set("alice", ["uds-admins"]);
  await using app = await appWith(provider);
  assert.deepEqual(await sessionEntries(app), {});
  const client = new AdminClient(app);
  assert.equal((await ssoSignIn(client, "alice")).status, 303);
  assert.deepEqual(await sessionEntries(app), { admin_sessions: 1, admin_sessions_by_user: 1 });
  await client.page("/admin");
  assert.equal((await client.post("/admin/logout")).status, 200);
  assert.deepEqual(await sessionEntries(app), {});
});

Deno.test("requests arriving together after the check interval cause one check", async () => {
  await using provider = await startTestProvider([BASE_URL]);
  provider.users.set("alice", ["uds-admins"]);
  await using app = await appWith(provider, { settings: { checkIntervalSeconds: 1 } });
  const client = new AdminClient(app);
  assert.equal((await ssoSignIn(client, "alice")).status, 303);
  await sleep(1_100);
  const tokenCalls = () => provider.requests.filter((path) => path === "/token").length;
  const before = tokenCalls();
  const statuses = await Promise.all(
    Array.from({ length: 5 }, async () => (await client.fetch("/admin")).status),
  );
  assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
  assert.equal(tokenCalls(), before + 1, "one refresh for the five requests");
  assert.deepEqual(await sessionEntries(app), { admin_sessions: 1, admin_sessions_by_user: 1 });
});

Deno.test("a removed group takes effect at the first request after the check interval", async (t) => {
  await using provider = await startTestProvider([BASE_URL]);
  provider.users.set("alice", ["uds-admins"]);
  await using app = await appWith(provider, { settings: { checkIntervalSeconds: 1 } });
  const client = new AdminClient(app);
  assert.equal((await ssoSignIn(client, "alice")).status, 303);

  await t.step("a group changed at the provider: the role follows after the interval", async () => {
    provider.users.set("alice", ["uds-viewers"]);
    assert.equal((await client.fetch("/admin/accounts")).status, 200, "within the interval");
    await sleep(1_100);
    const tokenCalls = () => provider.requests.filter((path) => path === "/token").length;
    const before = tokenCalls();
    assert.equal((await client.fetch("/admin/accounts")).status, 403);
    assert.equal(tokenCalls(), before + 1, "the refresh token was used");
    assert.equal(roleOf((await getAdminUser(app.store, "alice"))!), "viewer");
    assert.equal((await client.fetch("/admin")).status, 200);
  });

  await t.step("the last group removed: the session ends with a message", async () => {
    provider.users.set("alice", []);
    assert.equal((await client.fetch("/admin")).status, 200, "within the interval");
    await sleep(1_100);
    const res = await client.fetch("/admin");
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/login");
    const html = await (await client.fetch("/admin/login")).text();
    assert.match(html, /You were signed out: .*is in no group that gives a role here/);
    assert.doesNotMatch(html, /APP_OIDC/, "the settings' names are for the audit log");
    assert.equal((await client.fetch("/admin")).status, 303);
    const entry = await lastAudit(app);
    assert.equal(entry.action, "auth.session_ended");
    assert.equal(entry.actor, "alice");
    assert.match(entry.details, /APP_OIDC_ADMIN_GROUPS/);
  });

  await t.step("signing in again is refused while no group gives a role", async () => {
    const res = await ssoSignIn(new AdminClient(app), "alice");
    assert.equal(res.status, 403);
  });
});

Deno.test("without a refresh token the session check reads userinfo", async () => {
  await using provider = await startTestProvider([BASE_URL], { refreshTokens: false });
  provider.users.set("alice", ["uds-admins"]);
  await using app = await appWith(provider, { settings: { checkIntervalSeconds: 1 } });
  const client = new AdminClient(app);
  assert.equal((await ssoSignIn(client, "alice")).status, 303);
  provider.users.set("alice", ["uds-viewers"]);
  await sleep(1_100);
  assert.equal((await client.fetch("/admin/accounts")).status, 403);
  assert.equal((await client.fetch("/admin")).status, 200);
  provider.users.set("alice", []);
  await sleep(1_100);
  assert.equal((await client.fetch("/admin")).status, 303);
});

Deno.test("no refresh token and the access token expired: the audit entry says so", async () => {
  await using provider = await startTestProvider([BASE_URL], { refreshTokens: false });
  provider.users.set("alice", ["uds-admins"]);
  await using app = await appWith(provider);
  const client = new AdminClient(app);
  assert.equal((await ssoSignIn(client, "alice")).status, 303);
  const key = adminSessionKey(sha256Hex(client.cookies.get("uds_session")!));
  const session = (await app.store.kv.get<AdminSession>(key)).value!;
  const sso = { ...session.sso!, checked_at: 0, access_expires_at: Date.now() - 1 };
  await app.store.kv.set(key, { ...session, sso });
  const res = await client.fetch("/admin");
  assert.equal(res.status, 303);
  assert.equal(res.headers.get("location"), "/admin/login");
  const entry = await lastAudit(app);
  assert.equal(entry.action, "auth.session_ended");
  assert.equal(
    entry.details,
    "OpenID Connect provider Test IdP: your groups are due to be checked and Test IdP gave no " +
      "refresh token: sign in again",
  );
});

Deno.test("local passwords off: no password form, the break-glass sign-in works", async (t) => {
  await using provider = await startTestProvider([BASE_URL]);
  provider.users.set("alice", ["uds-admins"]);
  await using app = await appWith(provider, { settings: { localPasswords: false } });

  await t.step("the sign-in page has only the provider's button", async () => {
    const html = await (await new AdminClient(app).fetch("/admin/login")).text();
    assert.match(html, /Sign in with Test IdP/);
    assert.doesNotMatch(html, /id="password"/);
  });

  await t.step("a password sign-in of an account that is not break-glass is refused", async () => {
    const client = new AdminClient(app);
    assert.equal((await ssoSignIn(client, "alice")).status, 303);
    const other = new AdminClient(app);
    await other.page("/admin/login?break-glass");
    const res = await other.post("/admin/login", { username: "alice", password: "whatever" });
    assert.equal(res.status, 401);
    assert.equal((await lastAudit(app)).action, "auth.sign_in_failed");
  });

  await t.step("the break-glass page signs the local admin in", async () => {
    const client = new AdminClient(app);
    const { html } = await client.page("/admin/login?break-glass");
    assert.match(html, /id="password"/);
    assert.match(html, /APP_OIDC_BREAK_GLASS_USERS/);
    const res = await client.post("/admin/login", {
      username: "admin",
      password: "correct horse battery staple",
    });
    assert.equal(res.status, 303);
    assert.equal((await client.fetch("/admin/accounts")).status, 200);
  });
});

Deno.test("a provider that cannot be reached", async (t) => {
  const closedPort = freePort();
  const issuer = `http://127.0.0.1:${closedPort}`;
  await using app = await appWith({ issuer } as TestProvider);

  await t.step("a sign-in through it is a page, not a 500", async () => {
    const res = await new AdminClient(app).fetch("/admin/login/sso");
    assert.equal(res.status, 502);
    assert.match(await res.text(), /Test IdP cannot be reached just now/);
  });

  await t.step("at start it is a warning, tried again", async () => {
    const sso = createSso({
      store: app.store,
      settings: oidcSettings({ issuer }).oidc!,
      redirectUri: `${BASE_URL}/admin/login/sso/callback`,
    });
    const warnings: string[] = [];
    sso.start((message) => warnings.push(message));
    await new Promise<void>((resolve) => {
      const wait = setInterval(() => {
        if (warnings.length > 0) {
          clearInterval(wait);
          resolve();
        }
      }, 20);
    });
    sso.stop();
    assert.match(warnings[0], /not reachable at start .*trying again in 5 s/);
  });
});

Deno.test("OpenID Connect settings", async (t) => {
  const base = {
    APP_OIDC_ISSUER: "https://idp.example.com/realms/acme",
    APP_OIDC_CLIENT_ID: "uds",
    APP_OIDC_ADMIN_GROUPS: "uds-admins",
  };
  const refused = (env: Record<string, string>, pattern: RegExp) =>
    assert.throws(() => loadConfig(env), (error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, pattern);
      assert.doesNotMatch(error.message, /\n/);
      return true;
    });

  await t.step("unset: off; set: read with their defaults", () => {
    assert.equal(loadConfig({}).oidc, undefined);
    const oidc = loadConfig(base).oidc!;
    assert.equal(oidc.scopes, "openid profile email");
    assert.equal(oidc.usernameClaim, "preferred_username");
    assert.equal(oidc.groupsClaim, "groups");
    assert.deepEqual(oidc.roleGroups, { admin: ["uds-admins"], publisher: [], viewer: [] });
    assert.equal(oidc.localPasswords, true);
    assert.deepEqual(oidc.breakGlassUsers, ["admin"]);
    assert.equal(oidc.checkIntervalSeconds, 300);
    assert.equal(oidc.providerName, "idp.example.com");
  });

  await t.step("bad settings stop the start with one line", () => {
    refused({ APP_OIDC_CLIENT_ID: "uds" }, /APP_OIDC_ISSUER: required with APP_OIDC_CLIENT_ID/);
    refused(
      { ...base, APP_OIDC_ISSUER: "idp.example.com" },
      /APP_OIDC_ISSUER: expected an absolute/,
    );
    refused({ ...base, APP_OIDC_ISSUER: "http://idp.example.com" }, /expected an https:\/\//);
    refused({ ...base, APP_OIDC_CLIENT_ID: "" }, /APP_OIDC_CLIENT_ID: required/);
    refused({ ...base, APP_OIDC_SCOPES: "profile email" }, /APP_OIDC_SCOPES: must include openid/);
    refused({ ...base, APP_OIDC_ADMIN_GROUPS: "" }, /set at least one of APP_OIDC_ADMIN_GROUPS/);
    refused({ ...base, APP_OIDC_LOCAL_PASSWORDS: "maybe" }, /APP_OIDC_LOCAL_PASSWORDS/);
    refused(
      { ...base, APP_OIDC_LOCAL_PASSWORDS: "false", APP_OIDC_BREAK_GLASS_USERS: "," },
      /APP_OIDC_BREAK_GLASS_USERS: name at least one/,
    );
    refused({ ...base, APP_OIDC_BREAK_GLASS_USERS: "bad name" }, /not a valid user name/);
    refused({ ...base, APP_OIDC_CHECK_INTERVAL_SECONDS: "-1" }, /APP_OIDC_CHECK_INTERVAL/);
  });

  await t.step("http:// is accepted for a loopback issuer only", () => {
    const oidc = loadConfig({ ...base, APP_OIDC_ISSUER: "http://127.0.0.1:9000" }).oidc!;
    assert.equal(oidc.issuer, "http://127.0.0.1:9000");
  });
});
