/** The bench's pure parts: reading wrk reports, parameters, ratios and targets, the nginx config. */
import assert from "node:assert/strict";
import { ParamError, parseParams } from "../bench/params.ts";
import { nginxConfig } from "../bench/process.ts";
import { formatTable, makeRow } from "../bench/table.ts";
import { parseWrkOutput, parseWrkTime } from "../bench/wrk.ts";
import { formatLayerCosts, layers } from "../bench/scenarios_layers.ts";

const WRK_REPORT = `Running 10s test @ http://127.0.0.1:8000/api/v1/projects/app/releases/latest
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.31ms  812.00us  21.40ms   91.02%
    Req/Sec    14.02k     1.10k   16.08k    72.50%
  Latency Distribution
     50%    2.10ms
     75%    2.40ms
     90%    3.02ms
     99%    5.71ms
  279012 requests in 10.00s, 180.12MB read
Requests/sec:  27892.41
Transfer/sec:     18.01MB
`;

Deno.test("wrk: times in us, ms, s and m become milliseconds", () => {
  assert.equal(parseWrkTime("812.00us"), 0.812);
  assert.equal(parseWrkTime("2.10ms"), 2.1);
  assert.equal(parseWrkTime("1.50s"), 1500);
  assert.equal(parseWrkTime("2.00m"), 120_000);
  assert.throws(() => parseWrkTime("fast"));
});

Deno.test("wrk: the --latency report gives rate, p50, p90, p99 and no errors", () => {
  assert.deepEqual(parseWrkOutput(WRK_REPORT), {
    requests: 279012,
    requestsPerSec: 27892.41,
    p50Ms: 2.1,
    p90Ms: 3.02,
    p99Ms: 5.71,
    non2xx: 0,
    socketErrors: 0,
  });
});

Deno.test("wrk: error responses and socket errors are counted", () => {
  const report = WRK_REPORT.replace(
    "Requests/sec:",
    "  Socket errors: connect 0, read 3, write 1, timeout 2\n" +
      "  Non-2xx or 3xx responses: 17\nRequests/sec:",
  );
  const result = parseWrkOutput(report);
  assert.equal(result.non2xx, 17);
  assert.equal(result.socketErrors, 6);
});

Deno.test("wrk: a report without the latency distribution is refused", () => {
  assert.throws(() => parseWrkOutput(WRK_REPORT.replace(/ {5}99%.*\n/, "")), /99% latency/);
});

Deno.test("rows: a ratio of service to baseline, or a cost ratio the other way round", () => {
  const faster = makeRow({
    scenario: "s",
    metric: "requests/s",
    unit: "req/s",
    service: 600,
    baseline: 1000,
    baselineName: "b",
    ratioOf: "service/baseline",
    target: { of: "ratio", op: ">=", value: 0.6 },
  });
  assert.equal(faster.ratio, 0.6);
  assert.equal(faster.met, true);
  const cost = makeRow({
    scenario: "s",
    metric: "requests/s",
    unit: "req/s",
    service: 800,
    baseline: 1000,
    baselineName: "small",
    ratioOf: "baseline/service",
    target: { of: "ratio", op: "<=", value: 1.2 },
  });
  assert.equal(cost.ratio, 1.25);
  assert.equal(cost.met, false);
  const absolute = makeRow({
    scenario: "s",
    metric: "peak",
    unit: "MiB",
    service: 151,
    target: { of: "service", op: "<=", value: 150 },
  });
  assert.equal(absolute.ratio, null);
  assert.equal(absolute.met, false);
  const skipped = makeRow({ ...absolute, service: null, note: "skipped" });
  assert.equal(skipped.met, null);

  const table = formatTable([faster, cost, absolute, skipped]);
  assert.match(table, /ratio ≥ 0\.6 +yes/);
  assert.match(table, /cost ≤ 1\.2 +NO/);
  assert.match(table, /≤ 150 MiB +n\/a/);
  assert.match(table, /\[1\] skipped/);
});

Deno.test("params: flags win over the environment, which wins over the defaults", () => {
  const env = (name: string) =>
    ({ BENCH_DURATION: "3", BENCH_KEYS: "500", INIT_CWD: "/somewhere" })[name];
  const params = parseParams(
    ["--duration=1", "--scenarios", "latest,upload", "--out", "r.json"],
    env,
  );
  assert.ok(params !== "help");
  assert.equal(params.duration, 1);
  assert.equal(params.keys, 500);
  assert.equal(params.releases, 10_000);
  assert.deepEqual(params.scenarios, ["latest", "upload"]);
  assert.equal(params.out, "/somewhere/r.json");
  assert.throws(() => parseParams(["--duration=0"], () => undefined), ParamError);
  assert.throws(() => parseParams(["--scenarios=nope"], () => undefined), ParamError);
  assert.throws(() => parseParams(["--bogus"], () => undefined), ParamError);
  assert.equal(parseParams(["--warmup", "0"], () => undefined) !== "help", true);
});

Deno.test("nginx config: sendfile, no access log, our own pid and temp paths", () => {
  const conf = nginxConfig({ workDir: "/tmp/w", root: "/data/a", port: 8123, asRoot: true });
  assert.match(conf, /^user root;/);
  assert.match(conf, /daemon off;/);
  assert.match(conf, /pid \/tmp\/w\/nginx\.pid;/);
  assert.match(conf, /events \{/);
  assert.match(conf, /access_log off;/);
  assert.match(conf, /sendfile on;/);
  assert.match(conf, /client_body_temp_path \/tmp\/w\/client_body_temp;/);
  assert.match(conf, /listen 127\.0\.0\.1:8123; root \/data\/a;/);
  assert.doesNotMatch(
    nginxConfig({ workDir: "/w", root: "/r", port: 1, asRoot: false }),
    /user root/,
  );
});

Deno.test("layer costs: all on minus one off, and the rest above the baseline", () => {
  const params = parseParams([], () => undefined);
  assert.ok(params !== "help");
  const [total, ...rows] = layers.template(params);
  const offs = [40, 45, 48, 44, 41];
  const table = formatLayerCosts([
    makeRow({ ...total, service: 50, baseline: 20 }),
    ...rows.map((row, i) => makeRow({ ...row, service: offs[i], baseline: 50 })),
  ]);
  assert.ok(table !== null);
  assert.match(table, /baseline 20\.0, service 50\.0, above the baseline 30\.0/);
  assert.match(table, /access log +10\.0$/m);
  assert.match(table, /request metrics +5\.0$/m);
  assert.match(table, /security and cache headers +2\.0$/m);
  assert.match(table, /rate limit +6\.0$/m);
  assert.match(table, /key hash, lookup and check +9\.0$/m);
  assert.match(table, /the rest \(routing, handler\) +-2\.0$/m);
  assert.equal(formatLayerCosts([]), null, "no layers rows, no table");
});
