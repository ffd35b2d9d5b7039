import assert from "node:assert/strict";
import { Counter, Histogram, Registry } from "prom-client";
import { createApp } from "../app.ts";
import type { Config } from "../src/lib/config.ts";
import { createMetricsApp } from "../src/http/metrics_route.ts";
import { setApiKeyActive } from "../src/credentials/api_keys.ts";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
  testMetrics,
} from "./helpers.ts";

const TOKEN = "metrics-token-0123456789";

/** Parses the text exposition format into `name{labels}` → value. */
function parseMetrics(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

async function scrape(): Promise<Map<string, number>> {
  return parseMetrics(await testMetrics.render());
}

/** How much each series moved while `action` ran. */
async function delta(action: () => Promise<unknown>): Promise<(series: string) => number> {
  const before = await scrape();
  await action();
  const after = await scrape();
  return (series) => {
    assert.ok(after.has(series), `no series ${series}`);
    return after.get(series)! - (before.get(series) ?? 0);
  };
}

async function withApp(
  overrides: Partial<Config>,
  run: (t: TestApp, secret: string) => Promise<void>,
): Promise<void> {
  await using t = await createTestApp(overrides);
  const { secret } = await seedKey(t);
  await run(t, secret);
}

Deno.test("/metrics access", async (t) => {
  await t.step("off (404) when no token and no separate address is set", async () => {
    await withApp({}, async (app) => {
      const res = await app.request("/metrics");
      assert.equal(res.status, 404);
      await res.body?.cancel();
    });
  });

  await t.step("with APP_METRICS_TOKEN: bearer token required, compared exactly", async () => {
    await withApp({ metricsToken: TOKEN }, async (app) => {
      for (const auth of [undefined, "Bearer wrong-token-0123456789", `Bearer ${TOKEN}x`, TOKEN]) {
        const headers: HeadersInit = auth === undefined ? {} : { authorization: auth };
        const res = await app.request("/metrics", undefined, { headers });
        assert.equal(res.status, 401, `auth ${auth}`);
        assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="metrics"');
        assert.deepEqual(await res.json(), { error: "missing or invalid metrics token" });
      }
      const res = await app.request("/metrics", TOKEN);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
      assert.equal(res.headers.get("cache-control"), "no-store");
      const text = await res.text();
      assert.match(text, /^# TYPE http_requests_total counter$/m);
      assert.match(text, /^process_resident_memory_bytes \d+/m);
    });
  });

  await t.step("not rate limited like the client API", async () => {
    await withApp(
      { metricsToken: TOKEN, rateLimitBurst: 1, rateLimitPerMinute: 1 },
      async (app) => {
        for (let i = 0; i < 5; i++) {
          const res = await app.request("/metrics", TOKEN);
          assert.equal(res.status, 200);
          await res.body?.cancel();
        }
      },
    );
  });

  await t.step("with APP_METRICS_ADDRESS: only on the separate listener", async () => {
    const address = { hostname: "127.0.0.1", port: 0 };
    await withApp({ metricsToken: TOKEN, metricsAddress: address }, async (app) => {
      const main = await app.request("/metrics", TOKEN);
      assert.equal(main.status, 404);
      await main.body?.cancel();

      const metricsApp = createMetricsApp(app.config, testMetrics);
      const res = await metricsApp.request("/metrics", {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(res.status, 200);
      assert.match(await res.text(), /http_requests_total/);
      const denied = await metricsApp.request("/metrics");
      assert.equal(denied.status, 401, "the token still applies on the separate listener");
      await denied.body?.cancel();
      const other = await metricsApp.request("/api/v1");
      assert.equal(other.status, 404, "the metrics listener serves nothing else");
      await other.body?.cancel();
    });
    // Without a token the separate listener is open (it is meant for a private network).
    const open = createMetricsApp({ metricsToken: undefined } as Config, testMetrics);
    const res = await open.request("/metrics");
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
});

Deno.test("metrics move with traffic", async (t) => {
  await using app = await createTestApp({ metricsToken: TOKEN });
  const project = await seedProject(app, { slug: "desktop" });
  const bytes = new Uint8Array(300_000).fill(7);
  const release = await seedRelease(app, project.id, "1.0.0", bytes);
  const { secret } = await seedKey(app);
  const { secret: noDownload } = await seedKey(app, { can_download: false });
  const { apiKey: disabledKey, secret: disabled } = await seedKey(app);
  await setApiKeyActive(app.store, disabledKey.id, false);

  await t.step("requests by route pattern and status, with a latency histogram", async () => {
    const moved = await delta(async () => {
      for (let i = 0; i < 3; i++) {
        await (await app.request("/api/v1/projects/desktop/releases/latest", secret)).json();
      }
      await (await app.request("/api/v1/projects/nothing-here/releases/latest", secret)).json();
    });
    const route = 'route="/api/v1/projects/:slug/releases/latest"';
    assert.equal(moved(`http_requests_total{method="GET",${route},status="200"}`), 3);
    assert.equal(moved(`http_requests_total{method="GET",${route},status="404"}`), 1);
    assert.equal(moved(`http_request_duration_seconds_count{method="GET",${route}}`), 4);
    assert.equal(moved(`http_request_duration_seconds_bucket{le="+Inf",method="GET",${route}}`), 4);
    const text = await testMetrics.render();
    assert.ok(!text.includes("nothing-here"), "raw paths never become labels");
  });

  await t.step("unknown methods and paths stay within a bounded label set", async () => {
    const moved = await delta(async () => {
      await (await app.request("/no/such/path/12345", undefined, { method: "PROPFIND" })).text();
      await (await app.request("/api/v1/no/such/12345")).text();
      // And these digits as a value: a range of 12345 bytes.
      const range = { headers: { range: "bytes=0-12344" } };
      const delivered = async () => (await scrape()).get("uds_delivered_bytes_total") ?? 0;
      const before = await delivered();
      await (await app.request(`/api/v1/releases/${release.id}/download`, secret, range)).bytes();
      // The delivered bytes move once their KV sums are written (src/stats/delivery.ts).
      for (let waited = 0; waited < 2000 && await delivered() === before; waited += 10) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    });
    assert.equal(moved('http_requests_total{method="OTHER",route="/*",status="404"}'), 1);
    assert.equal(moved('http_requests_total{method="GET",route="/api/v1/*",status="404"}'), 1);
    assert.equal(moved("uds_delivered_bytes_total"), 12345);
    // Names and labels only: a value (a duration sum, a memory size) may hold these digits.
    const series = [...parseMetrics(await testMetrics.render()).keys()];
    assert.deepEqual(series.filter((name) => name.includes("12345")), [], "no raw path as a label");
  });

  await t.step("failed key checks by reason", async () => {
    const moved = await delta(async () => {
      await (await app.request("/api/v1/projects")).text();
      await (await app.request("/api/v1/projects", "uds_not_a_real_key")).text();
      await (await app.request("/api/v1/projects", disabled)).text();
      await (await app.request("/api/v1/projects", noDownload)).text();
    });
    assert.equal(moved('uds_api_key_check_failures_total{reason="missing"}'), 1);
    assert.equal(moved('uds_api_key_check_failures_total{reason="invalid"}'), 2);
    assert.equal(moved('uds_api_key_check_failures_total{reason="forbidden"}'), 1);
  });

  await t.step("downloads: count and bytes actually streamed", async () => {
    const moved = await delta(async () => {
      const res = await app.request(`/api/v1/releases/${release.id}/download`, secret);
      assert.equal((await res.arrayBuffer()).byteLength, bytes.byteLength);
    });
    assert.equal(moved('uds_artifact_downloads_total{result="complete"}'), 1);
    assert.equal(moved("uds_artifact_download_bytes_total"), bytes.byteLength);
    assert.equal(moved("uds_artifact_downloads_in_flight"), 0);
  });

  await t.step("all bytes sent then cancelled (as Deno.serve does) is complete", async () => {
    const moved = await delta(async () => {
      const res = await app.request(`/api/v1/releases/${release.id}/download`, secret);
      const reader = res.body!.getReader();
      let received = 0;
      while (received < bytes.byteLength) received += (await reader.read()).value!.byteLength;
      await reader.cancel();
    });
    assert.equal(moved('uds_artifact_downloads_total{result="complete"}'), 1);
    assert.equal(moved('uds_artifact_downloads_total{result="aborted"}'), 0);
    assert.equal(moved("uds_artifact_download_bytes_total"), bytes.byteLength);
  });

  await t.step("an aborted download counts as aborted with the bytes sent so far", async () => {
    const moved = await delta(async () => {
      const res = await app.request(`/api/v1/releases/${release.id}/download`, secret);
      const reader = res.body!.getReader();
      const first = await reader.read();
      assert.ok(!first.done && first.value.byteLength < bytes.byteLength);
      await reader.cancel();
    });
    assert.equal(moved('uds_artifact_downloads_total{result="aborted"}'), 1);
    assert.equal(moved('uds_artifact_downloads_total{result="complete"}'), 0);
    const sent = moved("uds_artifact_download_bytes_total");
    assert.ok(sent > 0 && sent < bytes.byteLength, `sent ${sent}`);
  });

  await t.step("HEAD of a download counts no download", async () => {
    const moved = await delta(async () => {
      const res = await app.request(`/api/v1/releases/${release.id}/download`, secret, {
        method: "HEAD",
      });
      assert.equal(res.status, 200);
      assert.equal(res.body, null);
    });
    assert.equal(moved('uds_artifact_downloads_total{result="complete"}'), 0);
    assert.equal(moved("uds_artifact_download_bytes_total"), 0);
  });

  await t.step("HEAD of a download leaves no artifact file open", async () => {
    const artifactsDir = await Deno.realPath(app.config.artifactsDir);
    /**
     * Descriptors of this process open on an artifact file (Linux: /proc/<pid>/fd, listed by
     * `find`, since Deno grants reading that folder only with every permission).
     */
    const openArtifacts = async () => {
      const { stdout } = await new Deno.Command("find", {
        args: [`/proc/${Deno.pid}/fd`, "-lname", `${artifactsDir}/*`],
        stdout: "piped",
        stderr: "null",
      }).output();
      return new TextDecoder().decode(stdout).split("\n").filter(Boolean);
    };
    assert.deepEqual(await openArtifacts(), []);
    for (let i = 0; i < 3; i++) {
      const res = await app.request(`/api/v1/releases/${release.id}/download`, secret, {
        method: "HEAD",
      });
      assert.equal(res.status, 200);
      assert.equal(res.body, null);
    }
    assert.deepEqual(await openArtifacts(), [], "HEAD must close the file it opened");
  });

  await t.step("429s", async () => {
    await withApp({ rateLimitBurst: 1, rateLimitPerMinute: 1 }, async (limited, key) => {
      const moved = await delta(async () => {
        for (let i = 0; i < 3; i++) await (await limited.request("/api/v1/projects", key)).text();
      });
      assert.equal(moved("uds_rate_limited_total"), 2);
      assert.equal(
        moved('http_requests_total{method="GET",route="/api/v1/projects",status="429"}'),
        2,
      );
    });
  });

  await t.step("KV errors: health ping and key lookup", async () => {
    const broken = await createTestApp();
    const app = createApp({
      config: broken.config,
      store: broken.store,
      artifacts: broken.artifacts,
      rateLimitKv: broken.rateLimitKv,
      recordKeyUse: () => {},
      metrics: testMetrics,
    });
    broken.kv.close();
    const quiet = console.error;
    console.error = () => {};
    try {
      const moved = await delta(async () => {
        assert.equal((await app.request("/healthz")).status, 503);
        const res = await app.request("/api/v1/projects", {
          headers: { authorization: "Bearer uds_anything" },
        });
        assert.equal(res.status, 503);
      });
      assert.equal(moved('uds_kv_errors_total{operation="health"}'), 1);
      assert.equal(moved('uds_kv_errors_total{operation="key_lookup"}'), 1);
    } finally {
      console.error = quiet;
      broken.rateLimitKv.close();
      await Deno.remove(broken.config.dataDir, { recursive: true });
    }
  });

  await t.step("uploads: count, bytes and failures by reason", async () => {
    const moved = await delta(() => {
      testMetrics.recordUpload(1234);
      testMetrics.recordUpload(766);
      testMetrics.recordUploadFailure("too_large");
      return Promise.resolve();
    });
    assert.equal(moved("uds_uploads_total"), 2);
    assert.equal(moved("uds_upload_bytes_total"), 2000);
    assert.equal(moved('uds_upload_failures_total{reason="too_large"}'), 1);
    assert.equal(moved('uds_upload_failures_total{reason="empty"}'), 0);
  });

  await t.step("process figures", async () => {
    const series = await scrape();
    assert.ok(series.get("process_resident_memory_bytes")! > 1_000_000);
    assert.ok(series.get("process_uptime_seconds")! > 0);
    assert.ok(series.get("process_start_time_seconds")! > 1_600_000_000);
  });
});

Deno.test("request metrics render exactly as prom-client's Counter and Histogram would", async () => {
  // The same observations through prom-client's own metrics, in a registry of their own.
  const reference = new Registry();
  const counter = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by method, matched route pattern and status code.",
    labelNames: ["method", "route", "status"],
    registers: [reference],
  });
  const histogram = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from request to response headers, by method and matched route pattern.",
    labelNames: ["method", "route"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [reference],
  });
  const observations: Array<[string, string, number, number]> = [
    ["GET", "/equivalence/a", 200, 0.0004],
    ["GET", "/equivalence/a", 200, 0.001],
    ["GET", "/equivalence/a", 404, 0.0031],
    ["HEAD", "/equivalence/a", 200, 0.25],
    ["PROPFIND", "/equivalence/*", 405, 12],
    ["BREW", "/equivalence/*", 405, 0.07],
    ["GET", "/equivalence/b", 429, 0],
  ];
  for (const [method, route, status, seconds] of observations) {
    testMetrics.recordRequest(method, route, status, seconds);
    const label = method === "GET" || method === "HEAD" ? method : "OTHER";
    counter.inc({ method: label, route, status: String(status) });
    histogram.observe({ method: label, route }, seconds);
  }
  /** The lines of the two request metrics about the routes above, and their HELP and TYPE. */
  const ours = (text: string) =>
    text.split("\n").filter((line) =>
      line.includes('route="/equivalence/') ||
      /^# (HELP|TYPE) http_request(s_total|_duration_seconds) /.test(line)
    );
  const expected = ours(await reference.metrics());
  assert.equal(expected.length, 4 + 5 + 4 * 16, "HELP and TYPE, 5 counter series, 4 histograms");
  assert.deepEqual(ours(await testMetrics.render()), expected);
});
