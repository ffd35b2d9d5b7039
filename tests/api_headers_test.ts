/** Response rules that hold across routes: headers, JSON, unknown paths, methods, 500s, hot path. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Hono } from "hono";
import { createApp } from "../app.ts";
import type { AppEnv } from "../src/http/app_env.ts";
import { createApiResponder } from "../src/http/response_headers.ts";
import { contentDisposition } from "../src/http/content_disposition.ts";
import { createKeyUsageRecorder } from "../src/credentials/key_usage.ts";
import { apiKeyLastUsedKey, releaseKey } from "../src/kv/keys.ts";
import type { AnswerSigner } from "../src/signing/signing_keys.ts";
import { assertError, assertProtectedHeaders, assertSecurityHeaders } from "./asserts.ts";
import { captureErrors, faultyKv } from "./faults.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

const encoder = new TextEncoder();

/** A request of every kind of outcome the service can give. */
async function everyKindOfResponse(t: TestApp): Promise<[string, Response][]> {
  const project = await seedProject(t, { slug: "app" });
  const release = await seedRelease(t, project.id, "1.0");
  const { secret } = await seedKey(t);
  const { secret: noDownload } = await seedKey(t, { can_download: false });
  return [
    ["healthz", await t.request("/healthz")],
    ["index", await t.request("/api/v1")],
    ["projects", await t.request("/api/v1/projects", secret)],
    ["latest", await t.request("/api/v1/projects/app/releases/latest", secret)],
    ["metadata", await t.request(`/api/v1/releases/${release.id}`, secret)],
    ["download", await t.request(`/api/v1/releases/${release.id}/download`, secret)],
    ["400", await t.request("/api/v1/releases/x", secret)],
    ["401 missing", await t.request("/api/v1/projects")],
    ["401 invalid", await t.request("/api/v1/projects", "uds_bad")],
    ["403", await t.request("/api/v1/projects", noDownload)],
    ["404 api", await t.request("/api/v1/projects/none/releases/latest", secret)],
    ["404 unknown api path", await t.request("/api/v1/nothing-here")],
    ["404 outside api", await t.request("/no/such/page")],
    ["405", await t.request("/api/v1/projects", secret, { method: "POST" })],
  ];
}

Deno.test("security headers on every response, errors and 404s included", async () => {
  await using t = await createTestApp();
  for (const [name, res] of await everyKindOfResponse(t)) {
    await res.body?.cancel();
    try {
      assertSecurityHeaders(res);
    } catch (error) {
      throw new Error(`${name}: ${(error as Error).message}`);
    }
  }
});

Deno.test("HSTS max-age=31536000 on every response when APP_BASE_URL is https://", async () => {
  await using t = await createTestApp({ baseUrl: "https://updates.example.com", https: true });
  for (const [name, res] of await everyKindOfResponse(t)) {
    await res.body?.cancel();
    assert.equal(res.headers.get("strict-transport-security"), "max-age=31536000", name);
  }
});

Deno.test("no HSTS when APP_BASE_URL is http://", async () => {
  await using t = await createTestApp({ baseUrl: "http://updates.example.com", https: false });
  for (const [name, res] of await everyKindOfResponse(t)) {
    await res.body?.cancel();
    assert.equal(res.headers.get("strict-transport-security"), null, name);
  }
});

Deno.test("application/json; charset=utf-8 on every JSON body", async () => {
  await using t = await createTestApp();
  for (const [name, res] of await everyKindOfResponse(t)) {
    if (name === "download") {
      await res.body?.cancel();
      continue;
    }
    assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8", name);
    JSON.parse(await res.text());
  }
});

Deno.test("protected-response cache headers on every /api/v1 response", async () => {
  await using t = await createTestApp();
  for (const [name, res] of await everyKindOfResponse(t)) {
    await res.body?.cancel();
    if (name === "healthz" || name === "404 outside api") continue;
    try {
      assertProtectedHeaders(res);
    } catch (error) {
      throw new Error(`${name}: ${(error as Error).message}`);
    }
  }
});

Deno.test("unknown paths under /api/v1 answer 404 resource not found as JSON", async () => {
  await using t = await createTestApp();
  const { secret } = await seedKey(t);
  for (
    const path of [
      "/api/v1/nope",
      "/api/v1/",
      "/api/v1/projects/app",
      "/api/v1/projects/app/releases",
      "/api/v1/projects/app/releases/1",
      "/api/v1/releases",
      "/api/v1/releases/1/download/extra",
      "/api/v1/keys",
    ]
  ) {
    for (const key of [undefined, secret]) {
      const res = await t.request(path, key);
      assertProtectedHeaders(res);
      await assertError(res, 404, "resource not found");
    }
  }
});

Deno.test("unknown paths outside the API answer 404 JSON too", async () => {
  await using t = await createTestApp();
  for (const path of ["/nope", "/api", "/api/v2/projects", "/healthz/x"]) {
    await assertError(await t.request(path), 404, "resource not found");
  }
});

Deno.test("write methods are not offered: 405 with Allow: GET, HEAD", async () => {
  await using t = await createTestApp();
  const { secret } = await seedKey(t);
  for (
    const path of [
      "/api/v1",
      "/api/v1/projects",
      "/api/v1/projects/app/releases/latest",
      "/api/v1/releases/1",
      "/api/v1/releases/1/download",
    ]
  ) {
    for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
      for (const key of [undefined, secret]) {
        const res = await t.request(path, key, {
          method,
          body: method === "OPTIONS" ? null : "{}",
        });
        assert.equal(res.headers.get("allow"), "GET, HEAD", `${method} ${path}`);
        assertSecurityHeaders(res);
        assertProtectedHeaders(res);
        await assertError(res, 405, "method not allowed");
      }
    }
  }
});

Deno.test("500 internal server error: JSON body, cause logged, no stack trace", async () => {
  await using t = await createTestApp({}, {
    wrapKv: (kv) => faultyKv(kv, { failGet: (key) => key[0] === "projects_by_slug" }),
  });
  const { secret } = await seedKey(t);
  const { value: res, logged } = await captureErrors(() =>
    t.request("/api/v1/projects/app/releases/latest", secret)
  );
  assertSecurityHeaders(res);
  assertProtectedHeaders(res);
  const text = await res.clone().text();
  await assertError(res, 500, "internal server error");
  assert.doesNotMatch(text, /kv get failed|at |\.ts/);
  assert.match(logged, /internal error/);
  assert.match(logged, /kv get failed \(test fault\)/);
});

Deno.test("Content-Disposition: a plain name is sent as attachment; filename=<name>", () => {
  for (const name of ["app.zip", "App-1.2.3_x64.tar.gz", "setup.exe", "a+b~c.bin"]) {
    assert.equal(contentDisposition(name), `attachment; filename=${name}`);
  }
});

Deno.test("Content-Disposition: quotes, spaces, non-ASCII and control characters are encoded", () => {
  const cases: [string, string][] = [
    ['my "app".zip', `attachment; filename="my _app_.zip"; filename*=UTF-8''my%20%22app%22.zip`],
    ["süß.zip", `attachment; filename="s__.zip"; filename*=UTF-8''s%C3%BC%C3%9F.zip`],
    [
      "a\r\nSet-Cookie: x=1",
      `attachment; filename="a__Set-Cookie: x=1"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x%3D1`,
    ],
    ["100%.zip", `attachment; filename="100_.zip"; filename*=UTF-8''100%25.zip`],
    ["a\\b;c.zip", `attachment; filename="a_b;c.zip"; filename*=UTF-8''a%5Cb%3Bc.zip`],
    [
      "日本語 (1).msi",
      `attachment; filename="___ (1).msi"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E%20%281%29.msi`,
    ],
    ["it's.zip", `attachment; filename="it's.zip"; filename*=UTF-8''it%27s.zip`],
  ];
  for (const [name, expected] of cases) {
    const value = contentDisposition(name);
    assert.equal(value, expected, JSON.stringify(name));
    assert.doesNotMatch(value, /[\r\n\x00-\x1f\x7f]|[^\x00-\x7f]/, "plain printable ASCII only");
    new Headers({ "content-disposition": value }); // a valid header value
  }
});

Deno.test("Content-Disposition on download: an unusual filename arrives safely", async () => {
  await using t = await createTestApp();
  const project = await seedProject(t, { slug: "app" });
  const release = await seedRelease(t, project.id, "1.0", undefined, {
    filename: 'naïve "v2".zip',
  });
  const { secret } = await seedKey(t);
  const res = await t.request(`/api/v1/releases/${release.id}/download`, secret);
  assert.equal(res.status, 200);
  assert.equal(
    res.headers.get("content-disposition"),
    `attachment; filename="na_ve _v2_.zip"; filename*=UTF-8''na%C3%AFve%20%22v2%22.zip`,
  );
  await res.body?.cancel();
});

Deno.test("downloads are sandboxed: Content-Security-Policy: sandbox on the API and feed files", async () => {
  await using t = await createTestApp();
  const project = await seedProject(t, { slug: "app" });
  const script = encoder.encode("alert(document.domain)");
  const release = await seedRelease(t, project.id, "1.0", script, {
    filename: "page.js",
    content_type: "text/javascript",
  });
  const { secret } = await seedKey(t);
  const answers = [
    await t.request(`/api/v1/releases/${release.id}/download`, secret),
    await t.request(`/api/v1/releases/${release.id}/download`, secret, { method: "HEAD" }),
    await t.request(`/api/v1/releases/${release.id}/download`, secret, {
      headers: { range: "bytes=0-4" },
    }),
    await t.request(`/feeds/files/${release.id}/page.js`, secret),
  ];
  assert.deepEqual(answers.map((res) => res.status), [200, 200, 206, 200]);
  for (const res of answers) {
    assert.equal(res.headers.get("content-security-policy"), "sandbox");
    assert.match(res.headers.get("content-disposition") ?? "", /^attachment;/);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    await res.body?.cancel();
  }
});

/** Counts the durable writes made through a KV. */
function countingKv(kv: Deno.Kv): { kv: Deno.Kv; writes: () => number } {
  let writes = 0;
  const wrapped = new Proxy(kv, {
    get(target, prop) {
      if (prop === "set" || prop === "delete" || prop === "atomic" || prop === "enqueue") writes++;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: wrapped, writes: () => writes };
}

Deno.test("hot path: every route fits Hono's RegExpRouter (no fallback to the slower TrieRouter)", async () => {
  // One route Hono's RegExpRouter cannot take (a static segment where another
  // route of the method has a parameter, say) makes SmartRouter fall back to the
  // TrieRouter for every route: about 0.7 µs more per client API request.
  await using t = await createTestApp();
  const res = await t.request("/api/v1");
  await res.body?.cancel();
  const router = t.app.router as unknown as { name: string; activeRouter: { name: string } };
  assert.equal(router.activeRouter.name, "RegExpRouter", router.name);
});

Deno.test("hot path: no durable KV write per request; last use at most once a minute", async () => {
  await using t = await createTestApp();
  const project = await seedProject(t, { slug: "app" });
  const release = await seedRelease(t, project.id, "1.0");
  const { apiKey, secret } = await seedKey(t);
  const counted = countingKv(t.kv);
  const countedStore = createStore(counted.kv);
  const app = createApp({
    config: t.config,
    store: countedStore,
    artifacts: t.artifacts,
    rateLimitKv: t.rateLimitKv,
    recordKeyUse: createKeyUsageRecorder(countedStore),
    // With UDS_TEST_SIGNING=1, the first key is made once, on the fixture's KV, not counted here.
    signer: t.signer,
  });
  for (let i = 0; i < 10; i++) {
    for (
      const path of [
        "/api/v1",
        "/api/v1/projects",
        "/api/v1/projects/app/releases/latest",
        `/api/v1/releases/${release.id}`,
      ]
    ) {
      const res = await app.request(path, { headers: { authorization: `Bearer ${secret}` } });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
  // One last_used_at write, and one adoption sighting (docs/rollouts.md "Adoption"): the
  // client's first of the day; its 9 further checks of the latest release write nothing.
  assert.equal(counted.writes(), 2, "one last_used_at and one adoption write for 40 requests");
  assert.ok((await t.kv.get(apiKeyLastUsedKey(apiKey.id))).value);
});

Deno.test("download artifacts never leave artifacts/ (storage key is not a path)", async () => {
  await using t = await createTestApp();
  const project = await seedProject(t, { slug: "app" });
  const release = await seedRelease(t, project.id, "1.0");
  const { secret } = await seedKey(t);
  // A record pointing outside artifacts/ (e.g. a tampered restore) is treated as a missing file.
  const outside = join(t.config.dataDir, "secret.txt");
  await Deno.writeTextFile(outside, "secret");
  await t.kv.set(releaseKey(release.id), { ...release, storage_key: "../secret.txt" });
  await assertError(
    await t.request(`/api/v1/releases/${release.id}/download`, secret),
    404,
    "release not found",
  );
});

Deno.test("JSON and file responses skip the document-only headers that admin pages carry", async () => {
  await using t = await createTestApp();
  const documentOnly = [
    "cross-origin-opener-policy",
    "origin-agent-cluster",
    "x-dns-prefetch-control",
    "x-download-options",
    "x-permitted-cross-domain-policies",
    "x-xss-protection",
  ];
  for (const path of ["/api/v1", "/healthz", "/nowhere"]) {
    const res = await t.request(path);
    await res.body?.cancel();
    assertSecurityHeaders(res);
    assert.equal(res.headers.get("cross-origin-resource-policy"), "same-origin", path);
    for (const name of documentOnly) assert.equal(res.headers.get(name), null, `${path} ${name}`);
  }
  const page = await t.request("/admin/login");
  await page.body?.cancel();
  assertSecurityHeaders(page);
  for (const name of documentOnly) assert.notEqual(page.headers.get(name), null, name);
});

Deno.test("signing on: a repeated error answer reuses its signature; another path is signed anew", async () => {
  const signed: string[] = [];
  const signer: AnswerSigner = {
    enabled: true,
    loaded: true,
    reuseSeconds: 60,
    generation: 0,
    signing: true,
    ready: () => Promise.resolve(),
    reload: () => Promise.resolve(),
    sign: ({ method, path, status }) => {
      signed.push(`${method} ${path} ${status}`);
      return [["uds-signature", `sig${signed.length}`]];
    },
    keys: () => [],
  };
  const respond = createApiResponder({ security: [], protected: [] }, signer);
  const app = new Hono<AppEnv>().get("*", (c) => respond.json(c, encoder.encode("{}"), 404));
  const signature = async (path: string) => {
    const res = await app.request(path);
    await res.body?.cancel();
    return res.headers.get("uds-signature");
  };
  assert.equal(await signature("/api/v1/a"), "sig1");
  assert.equal(await signature("/api/v1/a"), "sig1", "the same answer again: reused");
  assert.equal(await signature("/api/v1/b"), "sig2", "another path: signed anew");
  assert.deepEqual(signed, ["GET /api/v1/a 404", "GET /api/v1/b 404"]);
});
