/**
 * `deno task bench:scale`: the figures of running several instances, each
 * pair measured in the same run (absolute figures swing on a shared VM;
 * ratios hold):
 * - requests/s of a protected API call with the `memory` and the `kv` rate
 *   limit store (one instance, wrk);
 * - how long a key disabled through instance A stays usable on B and C
 *   (three instances on one KV file, measured per disable);
 * - requests/s with `start:all-cores` on every core vs one worker;
 * - every admin page on 5,000 projects, 10,000 releases in one project,
 *   50,000 keys and 100,000 audit entries (bench/scenarios_admin.ts): median
 *   time and HTML size per page, archive time, memory after browsing. With
 *   `SCALE_BEFORE_ROOT` (another checkout) both are measured, interleaved.
 *   `SCALE_ADMIN_DATA` keeps the seeded data dir between runs;
 * - on the same data, the client API at about 1,000 reads/s with and without
 *   one admin write a second, and the latest release idle and while an admin
 *   reloads the dashboard in a loop (bench/scenarios_scale_reads.ts;
 *   `SCALE_READS=writes|dashboard` runs one, `SCALE_WRITES=edit,upload,key`
 *   picks the writes).
 * Needs wrk. Prints a JSON report.
 */
import { join } from "node:path";
import { createApiKey } from "../src/credentials/api_keys.ts";
import { createProject } from "../src/projects/projects.ts";
import { Cleanup, freePort, PROJECT_ROOT, type Server, startService, which } from "./process.ts";
import { AdminClient, httpSender } from "../tests/admin_helpers.ts";
import { withStore } from "./data.ts";
import { median, percentile } from "./stats.ts";
import { runWrk } from "./wrk.ts";
import { adminPagesAtScale, SCALE_SIZES, seedAdminScale } from "./scenarios_admin.ts";
import { ADMIN_WRITES, type AdminWrite, readsWhileAdminsWork } from "./scenarios_scale_reads.ts";

const SECONDS = Number(Deno.env.get("SCALE_SECONDS") ?? 5);
const ROUNDS = Number(Deno.env.get("SCALE_ROUNDS") ?? 2);
const REVOCATIONS = Number(Deno.env.get("SCALE_REVOCATIONS") ?? 40);
const PASSWORD = "bench-password-123";
/**
 * Which parts to run (comma-separated): rate_limit, revocation, slack, all_cores, admin_pages,
 * reads_at_scale.
 */
const PARTS = (
  Deno.env.get("SCALE_PARTS") ?? "rate_limit,revocation,slack,all_cores,admin_pages,reads_at_scale"
).split(",");

const wrk = which("wrk");
if (wrk === null) {
  console.error("wrk is not installed (apt-get install -y wrk)");
  Deno.exit(2);
}
const cleanup = new Cleanup();
const dataDir = join(PROJECT_ROOT, "data", `bench-scale-${crypto.randomUUID().slice(0, 8)}`);
await Deno.mkdir(dataDir, { recursive: true });
cleanup.add(() => Deno.remove(dataDir, { recursive: true }));

const { apiKey, secret } = await withStore(dataDir, async (store) => {
  await createProject(store, { name: "Bench", slug: "bench" });
  return await createApiKey(store, {
    name: "bench",
    can_download: true,
    scope_mode: "all_projects",
  });
});
const auth = { authorization: `Bearer ${secret}` };
const env = { APP_ADMIN_PASSWORD: PASSWORD, APP_LOG_FORMAT: "json" };

async function rateLimitStores() {
  const figures: Record<string, number[]> = { memory: [], kv: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const store of ["memory", "kv"]) {
      const server = await startService(dataDir, { ...env, APP_RATE_LIMIT_STORE: store }, cleanup);
      const result = await runWrk(wrk!, {
        url: `${server.baseUrl}/api/v1/projects`,
        headers: auth,
        durationSeconds: SECONDS,
        connections: 32,
        threads: 1,
      });
      figures[store].push(Math.round(result.requestsPerSec));
      await server.stop();
    }
  }
  const memory = median(figures.memory);
  const kvStore = median(figures.kv);
  return { runs: figures, memory, kv: kvStore, ratio: +(kvStore / memory).toFixed(2) };
}

/** An admin session on one instance; returns a poster of forms (with the session's CSRF token). */
async function signIn(baseUrl: string) {
  const admin = new AdminClient(httpSender([baseUrl]));
  if ((await admin.signIn("admin", PASSWORD)).status !== 303) throw new Error("sign-in failed");
  await admin.page("/admin/api-keys");
  return async (path: string) => {
    const res = await admin.post(path);
    await res.body?.cancel();
    return res.status;
  };
}

async function revocationLatency() {
  const instances = [];
  for (let i = 0; i < 3; i++) instances.push(await startService(dataDir, env, cleanup));
  const [a, ...others] = instances;
  const post = await signIn(a.baseUrl);
  const status = async (baseUrl: string) => {
    const res = await fetch(`${baseUrl}/api/v1/projects`, { headers: auth });
    await res.body?.cancel();
    return res.status;
  };
  const untilStatus = async (baseUrl: string, wanted: number, since: number) => {
    while (await status(baseUrl) !== wanted) {
      if (performance.now() - since > 5000) throw new Error(`${baseUrl} never answered ${wanted}`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return performance.now() - since;
  };
  const latencies: number[] = [];
  for (let i = 0; i < REVOCATIONS; i++) {
    if (await post(`/admin/api-keys/${apiKey.id}/disable`) !== 303) throw new Error("disable");
    const disabledAt = performance.now();
    latencies.push(
      ...await Promise.all(others.map((o) => untilStatus(o.baseUrl, 401, disabledAt))),
    );
    if (await post(`/admin/api-keys/${apiKey.id}/enable`) !== 303) throw new Error("enable");
    const enabledAt = performance.now();
    await Promise.all(others.map((o) => untilStatus(o.baseUrl, 200, enabledAt)));
    // Land at a random point of the 50 ms poll cycle next time.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 50));
  }
  await Promise.all(instances.map((server) => server.stop()));
  const ms = (value: number) => +value.toFixed(1);
  return {
    samples: latencies.length,
    p50_ms: ms(percentile(latencies, 50)),
    p90_ms: ms(percentile(latencies, 90)),
    p99_ms: ms(percentile(latencies, 99)),
    max_ms: ms(Math.max(...latencies)),
  };
}

/**
 * Three instances with the kv store and a burst of 300 (no refill to speak
 * of): 8 concurrent clients of one key, each request to the next instance,
 * until 400 answers. Returns how many beyond 300 were granted, per trial.
 */
async function rateLimitSlack() {
  const burst = 300;
  const extra: number[] = [];
  let rate = 0;
  for (let trial = 0; trial < 3; trial++) {
    const { secret: trialSecret } = await withStore(
      dataDir,
      (store) =>
        createApiKey(store, {
          name: `slack ${trial}`,
          can_download: true,
          scope_mode: "all_projects",
        }),
    );
    const instances: Server[] = [];
    for (let i = 0; i < 3; i++) {
      instances.push(
        await startService(dataDir, {
          ...env,
          APP_RATE_LIMIT_STORE: "kv",
          APP_CLIENT_RATE_LIMIT_BURST: String(burst),
          APP_CLIENT_RATE_LIMIT_PER_MINUTE: "1",
        }, cleanup),
      );
    }
    let next = 0;
    const statuses: number[] = [];
    const started = performance.now();
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (statuses.length < burst + 100) {
        const res = await fetch(`${instances[next++ % 3].baseUrl}/api/v1/projects`, {
          headers: { authorization: `Bearer ${trialSecret}` },
        });
        await res.body?.cancel();
        statuses.push(res.status);
      }
    }));
    rate = Math.round(statuses.length / ((performance.now() - started) / 1000));
    extra.push(statuses.filter((status) => status === 200).length - burst);
    await Promise.all(instances.map((server) => server.stop()));
  }
  return { instances: 3, burst, request_rate_per_s: rate, granted_beyond_burst: extra };
}

/** `start:all-cores` with `workers` workers, until every one listens. */
async function startAllCores(workers: number, port: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "start:all-cores"],
    cwd: PROJECT_ROOT,
    env: {
      ...env,
      APP_DATA_DIR: dataDir,
      APP_PORT: String(port),
      APP_HOST: "127.0.0.1",
      APP_WORKERS: String(workers),
      APP_RATE_LIMIT_STORE: "kv",
      APP_CLIENT_RATE_LIMIT_PER_MINUTE: "1000000000",
      APP_CLIENT_RATE_LIMIT_BURST: "1000000000",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let listening = 0;
  const decoder = new TextDecoder();
  const ready = Promise.withResolvers<void>();
  const drained = (async () => {
    for await (const chunk of child.stdout) {
      if (listening >= workers) continue;
      listening += decoder.decode(chunk).split("listening on").length - 1;
      if (listening >= workers) ready.resolve();
    }
  })();
  await ready.promise;
  return async () => {
    child.kill("SIGTERM");
    await child.status;
    await drained;
  };
}

async function allCoresVsOne() {
  const cores = navigator.hardwareConcurrency;
  const figures: Record<string, number[]> = { one: [], all: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, workers] of [["one", 1], ["all", cores]] as const) {
      const port = freePort();
      const stop = await startAllCores(workers, port);
      const result = await runWrk(wrk!, {
        url: `http://127.0.0.1:${port}/api/v1/projects`,
        headers: auth,
        durationSeconds: SECONDS,
        connections: 64,
        threads: 2,
      });
      figures[name].push(Math.round(result.requestsPerSec));
      await stop();
    }
  }
  const one = median(figures.one);
  const all = median(figures.all);
  return { cores, runs: figures, one, all, ratio: +(all / one).toFixed(2) };
}

/** The data dir of the scale data (seeded unless `SCALE_ADMIN_DATA` holds it already) and the seconds it took. */
async function scaleData() {
  const adminDir = Deno.env.get("SCALE_ADMIN_DATA") ?? join(dataDir, "admin");
  const seedStarted = performance.now();
  await seedAdminScale(adminDir, SCALE_SIZES);
  return { adminDir, seedSeconds: +((performance.now() - seedStarted) / 1000).toFixed(1) };
}

async function adminPages() {
  const { adminDir, seedSeconds } = await scaleData();
  const runs = await adminPagesAtScale({
    dataDir: adminDir,
    env,
    password: PASSWORD,
    cleanup,
    beforeRoot: Deno.env.get("SCALE_BEFORE_ROOT"),
    rounds: ROUNDS,
    samples: Number(Deno.env.get("SCALE_PAGE_SAMPLES") ?? 9),
  });
  return { sizes: SCALE_SIZES, seed_seconds: seedSeconds, runs };
}

async function readsAtScale() {
  const { adminDir, seedSeconds } = await scaleData();
  const figures = await readsWhileAdminsWork({
    dataDir: adminDir,
    env,
    password: PASSWORD,
    cleanup,
    wrk: wrk!,
    rounds: ROUNDS,
    seconds: SECONDS,
    writes: (Deno.env.get("SCALE_WRITES")?.split(",") ?? ADMIN_WRITES) as AdminWrite[],
    comparisons: Deno.env.get("SCALE_READS")?.split(",") as Array<"writes" | "dashboard">,
  });
  return { sizes: SCALE_SIZES, seed_seconds: seedSeconds, ...figures };
}

try {
  const report = {
    generated_at: new Date().toISOString(),
    conditions: {
      cpus: navigator.hardwareConcurrency,
      loadavg_1m_at_start: Deno.loadavg()[0],
      seconds_per_wrk_run: SECONDS,
      rounds: ROUNDS,
    },
    rate_limit_req_per_s: PARTS.includes("rate_limit") ? await rateLimitStores() : null,
    revocation_latency: PARTS.includes("revocation") ? await revocationLatency() : null,
    rate_limit_slack: PARTS.includes("slack") ? await rateLimitSlack() : null,
    all_cores_req_per_s: PARTS.includes("all_cores") ? await allCoresVsOne() : null,
    admin_pages: PARTS.includes("admin_pages") ? await adminPages() : null,
    reads_at_scale: PARTS.includes("reads_at_scale") ? await readsAtScale() : null,
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  await cleanup.run();
}
