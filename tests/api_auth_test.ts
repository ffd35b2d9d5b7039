/**
 * Authentication and scope: ../shared/spec/client-api.md "5. Authentication" and "7. Errors",
 * ../shared/spec/admin-contract.md "Scope modes".
 */
import assert from "node:assert/strict";
import { judgeApiKey } from "../src/credentials/access.ts";
import { setApiKeyActive } from "../src/credentials/api_keys.ts";
import { setProjectState, updateProject } from "../src/projects/projects.ts";
import type { ApiKey } from "../src/credentials/types.ts";
import { assertError, assertProtectedHeaders, assertSecurityHeaders, readJson } from "./asserts.ts";
import { captureErrors, faultyKv } from "./faults.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";

const PROTECTED = [
  "/api/v1/projects",
  "/api/v1/projects/app/releases/latest",
  "/api/v1/releases/1",
  "/api/v1/releases/1/download",
];

async function withApp(fn: (t: TestApp) => Promise<void>) {
  await using t = await createTestApp({ serviceRealm: "acme-updates" });
  const project = await seedProject(t, { slug: "app" });
  await seedRelease(t, project.id, "1.0.0");
  await fn(t);
}

Deno.test("401 missing bearer api key, with WWW-Authenticate Bearer realm", () =>
  withApp(async (t) => {
    for (const path of PROTECTED) {
      const res = await t.request(path);
      assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="acme-updates"', path);
      assertProtectedHeaders(res);
      assertSecurityHeaders(res);
      await assertError(res, 401, "missing bearer api key");
    }
  }));

Deno.test("401 missing bearer api key: an Authorization header that is not a bearer token", () =>
  withApp(async (t) => {
    for (const value of ["", "Bearer", "Bearer   ", "Basic dXNlcjpwYXNz", "uds_abc", "Token x"]) {
      const res = await t.request("/api/v1/projects", undefined, {
        headers: { authorization: value },
      });
      assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="acme-updates"', value);
      await assertError(res, 401, "missing bearer api key");
    }
  }));

Deno.test("the Bearer scheme is case-insensitive", () =>
  withApp(async (t) => {
    const { secret } = await seedKey(t);
    const res = await t.request("/api/v1/projects", undefined, {
      headers: { authorization: `bearer ${secret}` },
    });
    assert.equal((await readJson(res, 200)).projects.length, 1);
  }));

Deno.test("401 invalid api key: unknown token", () =>
  withApp(async (t) => {
    const { secret } = await seedKey(t);
    for (const token of ["uds_unknown", secret + "x", secret.slice(0, -1), secret.toUpperCase()]) {
      for (const path of PROTECTED) {
        const res = await t.request(path, token);
        assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer realm="acme-updates"/);
        assertProtectedHeaders(res);
        await assertError(res, 401, "invalid api key");
      }
    }
  }));

Deno.test("401 invalid api key: disabled key; enabled again it works", () =>
  withApp(async (t) => {
    const { apiKey, secret } = await seedKey(t);
    await setApiKeyActive(t.store, apiKey.id, false);
    for (const path of PROTECTED) {
      await assertError(await t.request(path, secret), 401, "invalid api key");
    }
    await setApiKeyActive(t.store, apiKey.id, true);
    await readJson(await t.request("/api/v1/projects", secret), 200);
  }));

Deno.test("401 invalid api key: expired key (expires_at passed)", () =>
  withApp(async (t) => {
    const { secret } = await seedKey(t, { expires_at: new Date(Date.now() - 1000).toISOString() });
    for (const path of PROTECTED) {
      await assertError(await t.request(path, secret), 401, "invalid api key");
    }
  }));

Deno.test("a key with a future expires_at is accepted", () =>
  withApp(async (t) => {
    const { secret } = await seedKey(t, {
      expires_at: new Date(Date.now() + 60_000).toISOString(),
    });
    await readJson(await t.request("/api/v1/projects", secret), 200);
  }));

Deno.test("expiry: a key is rejected from the instant expires_at is reached", () => {
  const key = {
    active: true,
    can_download: true,
    expires_at: "2030-01-01T00:00:00.000Z",
  } as ApiKey;
  const at = Date.parse("2030-01-01T00:00:00.000Z");
  assert.equal(judgeApiKey(key, at - 1), "ok");
  assert.equal(judgeApiKey(key, at), "invalid");
  assert.equal(judgeApiKey({ ...key, expires_at: null }, at * 2), "ok");
});

Deno.test("403 api key permission denied: valid key without can_download", () =>
  withApp(async (t) => {
    const { secret } = await seedKey(t, { can_download: false });
    for (const path of PROTECTED) {
      const res = await t.request(path, secret);
      assertProtectedHeaders(res);
      assertSecurityHeaders(res);
      assert.equal(res.headers.get("www-authenticate"), null);
      await assertError(res, 403, "api key permission denied");
    }
  }));

Deno.test("a disabled key without can_download is 401, not 403", () =>
  withApp(async (t) => {
    const { apiKey, secret } = await seedKey(t, { can_download: false });
    await setApiKeyActive(t.store, apiKey.id, false);
    await assertError(await t.request("/api/v1/projects", secret), 401, "invalid api key");
  }));

Deno.test("check order: 401 and 403 come before 400 and 404", () =>
  withApp(async (t) => {
    const { secret: noDownload } = await seedKey(t, { can_download: false });
    for (const path of ["/api/v1/releases/abc", "/api/v1/releases/999/download"]) {
      await assertError(await t.request(path), 401, "missing bearer api key");
      await assertError(await t.request(path, "uds_nope"), 401, "invalid api key");
      await assertError(await t.request(path, noDownload), 403, "api key permission denied");
    }
    await assertError(
      await t.request("/api/v1/projects/nope/releases/latest", noDownload),
      403,
      "api key permission denied",
    );
  }));

Deno.test("503 api key service unavailable when KV fails while checking a key", async () => {
  await using t = await createTestApp({}, {
    wrapKv: (kv) => faultyKv(kv, { failGet: (key) => key[0] === "api_keys_by_hash" }),
  });
  const { secret } = await seedKey(t);
  for (const path of PROTECTED) {
    const { value: res, logged } = await captureErrors(() => t.request(path, secret));
    assertProtectedHeaders(res);
    assertSecurityHeaders(res);
    await assertError(res, 503, "api key service unavailable");
    assert.match(logged, /api key lookup failed/);
  }
  // Without a token there is nothing to look up: still the plain 401.
  await assertError(await t.request("/api/v1/projects"), 401, "missing bearer api key");
});

Deno.test("503 also when the key record itself cannot be read", async () => {
  await using t = await createTestApp({}, {
    wrapKv: (kv) => faultyKv(kv, { failGet: (key) => key[0] === "api_keys" }),
  });
  const { secret } = await seedKey(t);
  const { value: res } = await captureErrors(() => t.request("/api/v1/projects", secret));
  await assertError(res, 503, "api key service unavailable");
});

/** Projects: a (tags beta, win), b (tag mac), c (no tags); each with one release. */
async function withScopeFixtures(
  fn: (t: TestApp, ids: Record<"a" | "b" | "c", number>) => Promise<void>,
) {
  await using t = await createTestApp();
  const a = await seedProject(t, { slug: "a", tags: ["beta", "win"] });
  const b = await seedProject(t, { slug: "b", tags: ["mac"] });
  const c = await seedProject(t, { slug: "c" });
  for (const p of [a, b, c]) await seedRelease(t, p.id, "1.0");
  await fn(t, { a: a.id, b: b.id, c: c.id });
}

/** Which of the fixture projects the key can reach, through every protected route. */
async function reachable(t: TestApp, secret: string): Promise<string[]> {
  const listed = (await readJson(await t.request("/api/v1/projects", secret), 200)).projects
    .map((p: { slug: string }) => p.slug);
  for (const [i, slug] of ["a", "b", "c"].entries()) {
    const releaseId = i + 1;
    const responses = [
      await t.request(`/api/v1/projects/${slug}/releases/latest`, secret),
      await t.request(`/api/v1/releases/${releaseId}`, secret),
      await t.request(`/api/v1/releases/${releaseId}/download`, secret),
    ];
    for (const res of responses) {
      if (listed.includes(slug)) {
        assert.equal(res.status, 200, `${slug} is listed, so ${res.url} must work`);
        await res.body?.cancel();
      } else {
        await assertError(res, 404, "resource not found");
      }
    }
  }
  return listed;
}

Deno.test("scope all_projects: every active project", () =>
  withScopeFixtures(async (t) => {
    const { secret } = await seedKey(t, { scope_mode: "all_projects" });
    assert.deepEqual(await reachable(t, secret), ["a", "b", "c"]);
  }));

Deno.test("scope project_allow_list: only the listed projects", () =>
  withScopeFixtures(async (t, ids) => {
    const { secret } = await seedKey(t, {
      scope_mode: "project_allow_list",
      project_ids: [ids.a, ids.c],
    });
    assert.deepEqual(await reachable(t, secret), ["a", "c"]);
  }));

Deno.test("scope project_allow_list: an empty list grants nothing", () =>
  withScopeFixtures(async (t) => {
    const { secret } = await seedKey(t, { scope_mode: "project_allow_list", project_ids: [] });
    assert.deepEqual(await reachable(t, secret), []);
  }));

Deno.test("scope project_deny_list: every project except the listed ones", () =>
  withScopeFixtures(async (t, ids) => {
    const { secret } = await seedKey(t, { scope_mode: "project_deny_list", project_ids: [ids.b] });
    assert.deepEqual(await reachable(t, secret), ["a", "c"]);
  }));

Deno.test("scope project_deny_list: an empty list denies nothing", () =>
  withScopeFixtures(async (t) => {
    const { secret } = await seedKey(t, { scope_mode: "project_deny_list", project_ids: [] });
    assert.deepEqual(await reachable(t, secret), ["a", "b", "c"]);
  }));

Deno.test("scope tag_allow_list: projects with at least one listed tag", () =>
  withScopeFixtures(async (t) => {
    const { secret } = await seedKey(t, { scope_mode: "tag_allow_list", tags: ["win", "mac"] });
    assert.deepEqual(await reachable(t, secret), ["a", "b"]);
  }));

Deno.test("scope tag_allow_list: an empty list grants nothing", () =>
  withScopeFixtures(async (t) => {
    const { secret } = await seedKey(t, { scope_mode: "tag_allow_list", tags: [] });
    assert.deepEqual(await reachable(t, secret), []);
  }));

Deno.test("scope tag_deny_list: projects with none of the listed tags", () =>
  withScopeFixtures(async (t) => {
    const { secret } = await seedKey(t, { scope_mode: "tag_deny_list", tags: ["beta"] });
    assert.deepEqual(await reachable(t, secret), ["b", "c"]);
  }));

Deno.test("scope tag_deny_list: an empty list denies nothing", () =>
  withScopeFixtures(async (t) => {
    const { secret } = await seedKey(t, { scope_mode: "tag_deny_list", tags: [] });
    assert.deepEqual(await reachable(t, secret), ["a", "b", "c"]);
  }));

Deno.test("scope: a project's tag change takes effect on the next request", () =>
  withScopeFixtures(async (t, ids) => {
    const { secret } = await seedKey(t, { scope_mode: "tag_allow_list", tags: ["beta"] });
    assert.deepEqual(await reachable(t, secret), ["a"]);
    await updateProject(t.store, ids.c, { name: "c", tags: ["beta"] });
    await updateProject(t.store, ids.a, { name: "a", tags: [] });
    assert.deepEqual(await reachable(t, secret), ["c"]);
  }));

Deno.test("scope never reveals archived projects, whatever the mode", () =>
  withScopeFixtures(async (t, ids) => {
    await setProjectState(t.store, ids.b, "archived");
    const keys = [
      await seedKey(t, { scope_mode: "all_projects" }),
      await seedKey(t, { scope_mode: "project_allow_list", project_ids: [ids.b] }),
      await seedKey(t, { scope_mode: "tag_allow_list", tags: ["mac"] }),
      await seedKey(t, { scope_mode: "tag_deny_list", tags: ["beta"] }),
    ];
    const seen: string[][] = [];
    for (const { secret } of keys) seen.push(await reachable(t, secret));
    assert.deepEqual(seen, [["a", "c"], [], [], ["c"]]);
  }));
