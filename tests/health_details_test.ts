/**
 * Health details for operators (docs/operators.md "Health details"): `/healthz` keeps to the
 * contract's fields, `/healthz/details` adds `database_writes` and `storage` behind the metrics
 * token, wherever `/metrics` is served, and `/metrics` shows the database as gauges.
 */
import assert from "node:assert/strict";
import { createHealthChecks, healthDetailsHandler } from "../src/http/health.ts";
import { createMetricsApp } from "../src/http/metrics_route.ts";
import { createMetrics } from "../src/lib/metrics.ts";
import { readJson } from "./asserts.ts";
import { faultyKv, type KvFaults } from "./faults.ts";
import { createTestApp } from "./helpers.ts";

const TOKEN = "metrics-token-0123456789";
const isPing = (key: Deno.KvKey) => key[0] === "health";

Deno.test("healthz/details: behind the metrics token, with database_writes and storage", async (t) => {
  const faults: KvFaults = {};
  await using app = await createTestApp({ metricsToken: TOKEN, serviceName: "Acme" }, {
    wrapKv: (kv) => faultyKv(kv, faults),
  });

  await t.step("the token: without it 401, as /metrics", async () => {
    for (const key of [undefined, "wrong-token-0123456789"]) {
      const res = await app.request("/healthz/details", key);
      assert.equal(res.status, 401);
      assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="metrics"');
      assert.deepEqual(await res.json(), { error: "missing or invalid metrics token" });
    }
  });

  await t.step("with it: the contract's fields plus database_writes and storage", async () => {
    const res = await app.request("/healthz/details", TOKEN);
    const body = await readJson(res, 200);
    assert.deepEqual(Object.keys(body), [
      "database",
      "database_writes",
      "service",
      "status",
      "storage",
      "timestamp",
    ]);
    assert.deepEqual({ ...body, timestamp: undefined }, {
      database: "ok",
      database_writes: "ok",
      service: "Acme",
      status: "ok",
      storage: "ok",
      timestamp: undefined,
    });
    assert.equal(res.headers.get("cache-control"), "no-store");
  });

  await t.step("a database that answers no read: 503 with the contract's error", async () => {
    faults.failGet = isPing;
    const body = await readJson(await app.request("/healthz/details", TOKEN), 503);
    assert.equal(body.database, "unavailable");
    assert.equal(body.status, "degraded");
    assert.equal(body.error, "database ping failed");
    assert.equal(body.storage, "ok");
    const contract = await readJson(await app.request("/healthz"), 503);
    assert.deepEqual(Object.keys(contract).sort(), [
      "database",
      "error",
      "service",
      "status",
      "timestamp",
    ]);
    faults.failGet = undefined;
  });
});

Deno.test("healthz/details: served where /metrics is, nowhere else", async (t) => {
  await t.step("no metrics token, no metrics address: 404 on the main port", async () => {
    await using app = await createTestApp();
    const res = await app.request("/healthz/details", TOKEN);
    assert.equal(res.status, 404);
    await res.body?.cancel();
  });

  await t.step("APP_METRICS_ADDRESS: on the metrics listener only, with its token", async () => {
    await using app = await createTestApp({
      metricsToken: TOKEN,
      metricsAddress: { hostname: "127.0.0.1", port: 0 },
    });
    const main = await app.request("/healthz/details", TOKEN);
    assert.equal(main.status, 404);
    await main.body?.cancel();
    const health = createHealthChecks({ ...app, serviceName: "Acme", metrics: createMetrics() });
    const metricsApp = createMetricsApp(
      app.config,
      createMetrics(),
      healthDetailsHandler(health, TOKEN),
    );
    const denied = await metricsApp.request("/healthz/details");
    assert.equal(denied.status, 401);
    await denied.body?.cancel();
    const res = await metricsApp.request("/healthz/details", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal((await readJson(res, 200)).database_writes, "ok");
  });
});

Deno.test("/metrics: uds_database_up and uds_database_writes_up", async (t) => {
  await using app = await createTestApp();
  let again = () => Promise.resolve("");
  const scrape = async (faults: KvFaults) => {
    const metrics = createMetrics();
    again = () => metrics.render();
    const kv = faultyKv(app.kv, faults);
    const health = createHealthChecks({ ...app, kv, metrics, serviceName: "Acme" });
    metrics.addScrapeSource(health.gauges);
    return await metrics.render();
  };

  await t.step("a database that answers and takes writes: both 1", async () => {
    const text = await scrape({});
    assert.match(text, /^uds_database_up 1$/m);
    assert.match(text, /^uds_database_writes_up 1$/m);
  });

  await t.step(
    "writes refused: uds_database_writes_up 0, counted as a health KV error",
    async () => {
      const text = await scrape({ refuseWrites: "attempt to write a readonly database" });
      assert.match(text, /^uds_database_up 1$/m);
      assert.match(text, /^uds_database_writes_up 0$/m);
      // The registry is rendered before the gauges are read: the count shows at the next scrape.
      assert.match(await again(), /^uds_kv_errors_total\{operation="health"\} 1$/m);
    },
  );

  await t.step("reads failing: uds_database_up 0", async () => {
    const text = await scrape({ failGet: isPing });
    assert.match(text, /^uds_database_up 0$/m);
  });
});
