/** The JSON API scenarios, measured with wrk: latest release, project list, large data set. */
import { join } from "node:path";
import { type BenchContext, type Scenario, scratch } from "./context.ts";
import { seedLarge, seedProjects } from "./data.ts";
import { cpuSeconds, findServicePid, type Server, startBaseline, startService } from "./process.ts";
import { makeRow, type Row, type RowInput } from "./table.ts";
import { runWrk, type WrkResult } from "./wrk.ts";

export const BASELINE = "Deno.serve";

/** A wrk run and the server's CPU time per request during it. */
export interface Measured extends WrkResult {
  /** Server process CPU (user + system) per completed request, in µs. */
  cpuUsPerRequest: number;
}

/** Who sends a request: an API key alone, or with more headers (a rollout's `X-Install-Id`). */
export type Client = string | { key: string; headers: Record<string, string> };

/** The request headers of `client`: the key as a bearer token, then its own. */
export function clientHeaders(client: Client): Record<string, string> {
  return typeof client === "string"
    ? { authorization: `Bearer ${client}` }
    : { authorization: `Bearer ${client.key}`, ...client.headers };
}

/**
 * A warm-up run (figures dropped) when asked for, then the measured run,
 * with the CPU time process `pid` used during it (robust to other load on
 * the machine, unlike requests/s).
 */
export async function measure(
  ctx: BenchContext,
  url: string,
  client: Client,
  pid: number,
  warmup = true,
): Promise<Measured> {
  const { params, tools } = ctx;
  const options = {
    url,
    headers: clientHeaders(client),
    connections: params.connections,
    threads: params.threads,
  };
  if (warmup && params.warmup > 0) {
    await runWrk(tools.wrk!, { ...options, durationSeconds: params.warmup });
  }
  const cpuBefore = await cpuSeconds(pid);
  const result = await runWrk(tools.wrk!, { ...options, durationSeconds: params.duration });
  const cpu = await cpuSeconds(pid) - cpuBefore;
  return { ...result, cpuUsPerRequest: cpu * 1e6 / result.requests };
}

/** A 200 JSON answer of the service: its exact bytes and headers (the baseline sends the same). */
export interface Answer {
  body: Uint8Array;
  /**
   * `[name, value]` pairs in the order sent, without `date` and `content-length`
   * (Deno.serve adds both itself; an explicit Content-Length costs it more).
   */
  headers: [string, string][];
}

export const ADDED_BY_DENO_SERVE: ReadonlySet<string> = new Set(["date", "content-length"]);

/** GETs `url` once as `client` and checks the answer is 200 JSON. */
export async function fetchAnswer(
  url: string,
  client: Client,
  check: (json: unknown) => string | null,
): Promise<Answer> {
  const res = await fetch(url, { headers: clientHeaders(client) });
  const body = new Uint8Array(await res.arrayBuffer());
  const text = new TextDecoder().decode(body);
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${text}`);
  const problem = check(JSON.parse(text));
  if (problem) throw new Error(`GET ${url}: ${problem}`);
  const headers = [...res.headers].filter(([name]) => !ADDED_BY_DENO_SERVE.has(name));
  return { body, headers };
}

/** The basic service, its latest-release path, and its checked answer there. */
export async function latestAnswer(ctx: BenchContext) {
  const { data, server } = await ctx.basic();
  const path = `/api/v1/projects/${data.slug}/releases/latest`;
  const answer = await fetchAnswer(
    `${server.baseUrl}${path}`,
    data.key,
    // deno-lint-ignore no-explicit-any
    (json: any) => json?.release?.id === data.release.id ? null : "not the seeded release",
  );
  return { data, server, path, answer };
}

/** A bare Deno.serve answering `answer`, for the length of `use`. */
export async function withBaseline<T>(
  ctx: BenchContext,
  name: string,
  answer: Answer,
  use: (baseline: Server) => Promise<T>,
): Promise<T> {
  const bodyFile = scratch(ctx, `${name}-body.json`);
  const headersFile = scratch(ctx, `${name}-headers.json`);
  await Deno.writeFile(bodyFile, answer.body);
  await Deno.writeTextFile(headersFile, JSON.stringify(answer.headers));
  const baseline = await startBaseline(bodyFile, headersFile, ctx.cleanup);
  try {
    return await use(baseline);
  } finally {
    await baseline.stop();
  }
}

/**
 * Measures the service and a bare Deno.serve answering the same bytes and
 * headers in turn, `--runs` times (service, baseline, service, …: a slow
 * moment of the machine hits both), and keeps each one's best figures.
 */
export function againstBaseline(
  ctx: BenchContext,
  name: string,
  url: string,
  client: Client,
  server: Server,
  answer: Answer,
): Promise<{ service: Measured; baseline: Measured }> {
  return withBaseline(ctx, name, answer, async (baselineServer) => {
    const servicePid = await findServicePid(server.pid);
    const services: Measured[] = [];
    const baselines: Measured[] = [];
    for (let run = 1; run <= ctx.params.runs; run++) {
      const of = ctx.params.runs > 1 ? ` (run ${run} of ${ctx.params.runs})` : "";
      ctx.log(
        `${name}: wrk on the service${of} (${answer.body.byteLength} B body, ${answer.headers.length} headers)`,
      );
      services.push(await measure(ctx, url, client, servicePid, run === 1));
      ctx.log(`${name}: wrk on the baseline${of}`);
      baselines.push(
        await measure(ctx, `${baselineServer.baseUrl}/`, client, baselineServer.pid, run === 1),
      );
    }
    return { service: bestOf(services), baseline: bestOf(baselines) };
  });
}

/** The best of each figure over several runs: most requests/s, least latency and CPU. */
function bestOf(runs: Measured[]): Measured {
  const least = (pick: (run: Measured) => number) => Math.min(...runs.map(pick));
  return {
    ...runs.reduce((best, run) => run.requestsPerSec > best.requestsPerSec ? run : best),
    p50Ms: least((run) => run.p50Ms),
    p99Ms: least((run) => run.p99Ms),
    cpuUsPerRequest: least((run) => run.cpuUsPerRequest),
  };
}

/**
 * The rows of one figure against the baseline, from the template's requests/s, p99 latency and
 * CPU rows (in that order); `note` goes on the requests/s row.
 */
export function baselineRows(
  [rps, p99, cpu]: RowInput[],
  { service, baseline }: { service: Measured; baseline: Measured },
  note: string,
): Row[] {
  return [
    makeRow({ ...rps, service: service.requestsPerSec, baseline: baseline.requestsPerSec, note }),
    makeRow({ ...p99, service: service.p99Ms, baseline: baseline.p99Ms }),
    makeRow({ ...cpu, service: service.cpuUsPerRequest, baseline: baseline.cpuUsPerRequest }),
  ];
}

/** The row of server CPU per request, service against baseline. */
export function cpuRow(scenario: string) {
  return {
    scenario,
    metric: "server CPU per request",
    unit: "µs",
    service: null,
    baselineName: BASELINE,
  };
}

export const wrkNote = (ctx: BenchContext) =>
  `wrk ${ctx.params.threads} threads, ${ctx.params.connections} connections, ${ctx.params.duration} s; ` +
  `best of ${ctx.params.runs} interleaved runs`;

// ---------------------------------------------------------------------------

const LATEST = "latest-release";

export const latestRelease: Scenario = {
  name: "latest",
  needs: ["wrk"],
  template: () => [
    {
      scenario: LATEST,
      metric: "requests/s",
      unit: "req/s",
      service: null,
      baselineName: BASELINE,
      ratioOf: "service/baseline",
      target: { of: "ratio", op: ">=", value: 0.6 },
    },
    { scenario: LATEST, metric: "p50 latency", unit: "ms", service: null, baselineName: BASELINE },
    {
      scenario: LATEST,
      metric: "p99 latency",
      unit: "ms",
      service: null,
      baselineName: BASELINE,
      target: { of: "service", op: "<=", value: 5 },
    },
    cpuRow(LATEST),
  ],
  async run(ctx) {
    const { data, server, path, answer } = await latestAnswer(ctx);
    const url = `${server.baseUrl}${path}`;
    const measured = await againstBaseline(ctx, "latest", url, data.key, server, answer);
    const [rps, p50, p99, cpu] = this.template(ctx.params);
    const [rpsRow, p99Row, cpuUsRow] = baselineRows([rps, p99, cpu], measured, wrkNote(ctx));
    const { service, baseline } = measured;
    return [
      rpsRow,
      makeRow({ ...p50, service: service.p50Ms, baseline: baseline.p50Ms }),
      p99Row,
      cpuUsRow,
    ];
  },
};

// ---------------------------------------------------------------------------

const PROJECTS = "project list";

export const projectList: Scenario = {
  name: "projects",
  needs: ["wrk"],
  template: () => [
    {
      scenario: PROJECTS,
      metric: "requests/s",
      unit: "req/s",
      service: null,
      baselineName: BASELINE,
      ratioOf: "service/baseline",
      target: { of: "ratio", op: ">=", value: 0.5 },
    },
    {
      scenario: PROJECTS,
      metric: "p99 latency",
      unit: "ms",
      service: null,
      baselineName: BASELINE,
    },
    cpuRow(PROJECTS),
  ],
  async run(ctx) {
    const { projects, allowList } = ctx.params;
    const dataDir = join(ctx.workDir, "projects");
    ctx.log(`${PROJECTS}: seeding ${projects} projects, a key allowed ${allowList} of them`);
    const { key } = await seedProjects(dataDir, projects, allowList);
    const server = await startService(dataDir, {}, ctx.cleanup);
    try {
      const url = `${server.baseUrl}/api/v1/projects`;
      const answer = await fetchAnswer(
        url,
        key,
        // deno-lint-ignore no-explicit-any
        (json: any) =>
          json?.projects?.length === allowList
            ? null
            : `expected ${allowList} projects, got ${json?.projects?.length}`,
      );
      const measured = await againstBaseline(ctx, "projects", url, key, server, answer);
      return baselineRows(
        this.template(ctx.params),
        measured,
        `${allowList} of ${projects} projects visible to the key (${answer.body.byteLength} B body)`,
      );
    } finally {
      await server.stop();
    }
  },
};

// ---------------------------------------------------------------------------

const LARGE = "latest-release, large data";
const SMALL_BASELINE = "1 release, 1 key";

export const largeData: Scenario = {
  name: "large",
  needs: ["wrk"],
  template: (params) => [
    {
      scenario: LARGE,
      metric: "requests/s",
      unit: "req/s",
      service: null,
      baselineName: SMALL_BASELINE,
      ratioOf: "baseline/service",
      target: { of: "ratio", op: "<=", value: 1.2 },
      note: `${params.releases} releases, ${params.keys} keys; ratio = small-data rate ÷ ` +
        "large-data rate (how much slower with data)",
    },
    {
      scenario: LARGE,
      metric: "p99 latency",
      unit: "ms",
      service: null,
      baselineName: SMALL_BASELINE,
    },
  ],
  async run(ctx) {
    const { releases, keys } = ctx.params;
    const small = await ctx.basic();
    const dataDir = join(ctx.workDir, "large");
    ctx.log(`${LARGE}: seeding ${releases} releases and ${keys} keys (bulk)`);
    const started = performance.now();
    const large = await seedLarge(dataDir, releases, keys);
    ctx.log(`${LARGE}: seeded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const server = await startService(dataDir, {}, ctx.cleanup);
    try {
      const largeUrl = `${server.baseUrl}/api/v1/projects/${large.slug}/releases/latest`;
      await fetchAnswer(
        largeUrl,
        large.key,
        // deno-lint-ignore no-explicit-any
        (json: any) => json?.release?.id === large.latest.id ? null : "not the newest release",
      );
      const smallUrl = `${small.server.baseUrl}/api/v1/projects/${small.data.slug}/releases/latest`;
      ctx.log(`${LARGE}: wrk on the large data set`);
      const largeRun = await measure(ctx, largeUrl, large.key, await findServicePid(server.pid));
      ctx.log(`${LARGE}: wrk on the small data set`);
      const smallPid = await findServicePid(small.server.pid);
      const smallRun = await measure(ctx, smallUrl, small.data.key, smallPid);
      const [rps, p99] = this.template(ctx.params);
      return [
        makeRow({ ...rps, service: largeRun.requestsPerSec, baseline: smallRun.requestsPerSec }),
        makeRow({ ...p99, service: largeRun.p99Ms, baseline: smallRun.p99Ms }),
      ];
    } finally {
      await server.stop();
    }
  },
};
