/** The two public routes: GET /healthz and GET /api/v1 (../shared/spec/client-api.md "4. Endpoints"). */
import assert from "node:assert/strict";
import { assertSecurityHeaders, readJson } from "./asserts.ts";
import { captureErrors, faultyKv } from "./faults.ts";
import { createTestApp, seedKey } from "./helpers.ts";

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const isPing = (key: Deno.KvKey) => key[0] === "health";

Deno.test("healthz: 200 with database ok and status ok when KV answers", async () => {
  await using t = await createTestApp({ serviceName: "Acme Updates" });
  const res = await t.request("/healthz");
  const body = await readJson(res, 200);
  // Exactly the contract's fields (the details are at /healthz/details, tests/health_details_test.ts).
  assert.deepEqual(Object.keys(body).sort(), ["database", "service", "status", "timestamp"]);
  assert.equal(body.database, "ok");
  assert.equal(body.status, "ok");
  assert.equal(body.service, "Acme Updates");
  assert.match(body.timestamp, RFC3339);
  assert.ok(Math.abs(Date.parse(body.timestamp) - Date.now()) < 5000);
  assertSecurityHeaders(res);
});

Deno.test("healthz: 503 degraded with database ping failed when KV throws", async () => {
  await using t = await createTestApp({}, { wrapKv: (kv) => faultyKv(kv, { failGet: isPing }) });
  const res = await t.request("/healthz");
  const body = await readJson(res, 503);
  assert.deepEqual(Object.keys(body).sort(), [
    "database",
    "error",
    "service",
    "status",
    "timestamp",
  ]);
  assert.equal(body.database, "unavailable");
  assert.equal(body.status, "degraded");
  assert.equal(body.error, "database ping failed");
  assert.equal(body.service, "Update Distribution Service");
  assert.match(body.timestamp, RFC3339);
  assertSecurityHeaders(res);
});

Deno.test("healthz: 503 degraded when KV never answers (ping timeout)", async () => {
  await using t = await createTestApp({}, { wrapKv: (kv) => faultyKv(kv, { hangGet: isPing }) });
  const started = Date.now();
  const body = await readJson(await t.request("/healthz"), 503);
  assert.equal(body.status, "degraded");
  assert.equal(body.error, "database ping failed");
  assert.ok(Date.now() - started < 5000, "answers within the timeout");
});

Deno.test("healthz: HEAD answers 200 without a body", async () => {
  await using t = await createTestApp();
  const res = await t.request("/healthz", undefined, { method: "HEAD" });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "");
});

Deno.test("healthz: never rate limited", async () => {
  await using t = await createTestApp({ rateLimitBurst: 1, rateLimitPerMinute: 1 });
  for (let i = 0; i < 5; i++) {
    const res = await t.request("/healthz");
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
});

Deno.test("api index: the exact index object, without authorization", async () => {
  await using t = await createTestApp({ serviceName: "Acme Updates" });
  const res = await t.request("/api/v1");
  const body = await readJson(res, 200);
  // ../shared/spec/client-api.md "GET /api/v1": the fields, then the four routes in their order, with the
  // spec's words.
  assert.deepEqual(Object.keys(body).sort(), ["auth", "routes", "service", "status", "version"]);
  assert.deepEqual(body.auth, { header: "Authorization: Bearer <api_key>", type: "bearer" });
  assert.equal(body.service, "Acme Updates");
  assert.equal(body.status, "client-api-ready");
  assert.equal(body.version, "v1");
  const spec = [
    ["/api/v1/projects", "active projects accessible to the key"],
    [
      "/api/v1/projects/{projectSlug}/releases/latest",
      "latest active release metadata of an accessible project",
    ],
    ["/api/v1/releases/{releaseID}", "release metadata of an accessible release"],
    ["/api/v1/releases/{releaseID}/download", "private artifact download of an accessible release"],
  ];
  assert.deepEqual(
    body.routes,
    spec.map(([path, description]) => ({ description, method: "GET", path })),
  );
  assertSecurityHeaders(res);
});

Deno.test("api index: any Authorization header is ignored, even a bad one", async () => {
  await using t = await createTestApp();
  const { secret } = await seedKey(t);
  for (const key of [secret, "uds_not-a-key", ""]) {
    const body = await readJson(await t.request("/api/v1", key), 200);
    assert.equal(body.status, "client-api-ready");
  }
});

Deno.test("api index: still 200 when the key service is down", async () => {
  await using t = await createTestApp({}, {
    wrapKv: (kv) => faultyKv(kv, { failGet: () => true }),
  });
  const { value: res, logged } = await captureErrors(() => t.request("/api/v1", "uds_x"));
  assert.equal((await readJson(res, 200)).version, "v1");
  assert.match(logged, /api key lookup failed/);
});
