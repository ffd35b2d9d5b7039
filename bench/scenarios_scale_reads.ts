/**
 * The client API on the scale data while admins work (issue 19 items 2 and
 * 4): wrk sends about 1,000 reads/s (10 connections, each waiting
 * `READ_DELAY_MS` after every answer) and the figures are its p50/p99:
 * - **writes**: a mix of reads (latest release of `big` and of the 200 other
 *   projects with a release, a release by id, now and then the project list)
 *   with and without one admin write a second (a project edit, an upload, a
 *   key creation in turn). Goal: p99 with writes ≤ 1.5× without.
 * - **dashboard**: the latest release of `big`, idle and while one admin
 *   reloads the dashboard in a loop. Goal: p99 ≤ 2× idle.
 * Runs alternate (without, with, without, with …); the ratios are of the
 * medians.
 */
import { join } from "node:path";
import { AdminClient, httpSender } from "../tests/admin_helpers.ts";
import { createApiKey } from "../src/credentials/api_keys.ts";
import { withStore } from "./data.ts";
import { type Cleanup, type Server, startService } from "./process.ts";
import { median } from "./stats.ts";
import { runWrk, type WrkResult } from "./wrk.ts";

const CONNECTIONS = 10;
/** Each connection waits this long after an answer: 10 connections send about 1,000 requests/s. */
const READ_DELAY_MS = 9;

/** The mixed reads: ‰ of project lists, of latest of `big`, of latest of another project; the rest by id. */
function mixedScript(releaseIds: readonly number[]): string {
  return `-- bench/scenarios_scale_reads.ts: mixed client reads at about 1,000/s
local ids = { ${releaseIds.join(", ")} }
function request()
  local r = math.random(1000)
  local path
  if r <= 5 then
    path = "/api/v1/projects"
  elseif r <= 450 then
    path = "/api/v1/projects/big/releases/latest"
  elseif r <= 900 then
    path = string.format("/api/v1/projects/p-%04d/releases/latest", math.random(0, 199))
  else
    path = "/api/v1/releases/" .. ids[math.random(#ids)]
  end
  return wrk.format(nil, path)
end
function delay() return ${READ_DELAY_MS} end
`;
}

const LATEST_SCRIPT = `-- bench/scenarios_scale_reads.ts: the latest release of big at about 1,000/s
function request() return wrk.format(nil, "/api/v1/projects/big/releases/latest") end
function delay() return ${READ_DELAY_MS} end
`;

interface RunFigure {
  req_per_s: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
}

function figure(result: WrkResult): RunFigure {
  return {
    req_per_s: Math.round(result.requestsPerSec),
    p50_ms: +result.p50Ms.toFixed(2),
    p90_ms: +result.p90Ms.toFixed(2),
    p99_ms: +result.p99Ms.toFixed(2),
  };
}

/** Medians of the runs of each mode, and the ratio of the busy p99 to the quiet one. */
function summary(quiet: RunFigure[], busy: RunFigure[]) {
  const p99 = (runs: RunFigure[]) => median(runs.map((run) => run.p99_ms));
  const p90 = (runs: RunFigure[]) => median(runs.map((run) => run.p90_ms));
  return {
    quiet_runs: quiet,
    busy_runs: busy,
    quiet_p99_ms: p99(quiet),
    busy_p99_ms: p99(busy),
    p99_ratio: +(p99(busy) / p99(quiet)).toFixed(2),
    p90_ratio: +(p90(busy) / p90(quiet)).toFixed(2),
  };
}

/** The admin writes of the "writes" comparison, done in turn (`SCALE_WRITES`). */
export type AdminWrite = "edit" | "upload" | "key";
export const ADMIN_WRITES: readonly AdminWrite[] = ["edit", "upload", "key"];

/** One admin write of `kind`: an edit of p-0001, an upload to p-0002 or a key (each read by the mix). */
async function adminWrite(admin: AdminClient, kind: AdminWrite, n: number): Promise<void> {
  let res: Response;
  let wanted = 303;
  if (kind === "edit") {
    await admin.page("/admin/projects/p-0001");
    res = await admin.post("/admin/projects/p-0001", {
      name: "Project 0001",
      description: `Edited by the bench (${n}).`,
      tags: "beta",
    });
  } else if (kind === "upload") {
    res = await admin.upload("/admin/projects/p-0002/releases", [
      ["csrf_token", admin.csrfToken],
      ["version", `9.${Date.now()}.${n}`],
      ["file", new File([crypto.getRandomValues(new Uint8Array(1024))], "app.bin")],
    ]);
  } else {
    wanted = 200;
    res = await admin.post("/admin/api-keys", {
      name: `bench writer ${n}`,
      can_download: "on",
      scope_mode: "all_projects",
    });
  }
  await res.body?.cancel();
  if (res.status !== wanted) throw new Error(`admin write ${n} (${kind}) answered ${res.status}`);
}

/** One admin write a second, of `kinds` in turn, until `stop` resolves. */
async function writeEverySecond(
  admin: AdminClient,
  { stop, kinds }: { stop: Promise<void>; kinds: readonly AdminWrite[] },
) {
  let stopped = false;
  stop.then(() => stopped = true);
  const times: number[] = [];
  for (let n = 0; !stopped; n++) {
    const started = performance.now();
    await adminWrite(admin, kinds[n % kinds.length], n);
    times.push(performance.now() - started);
    await Promise.race([stop, new Promise((resolve) => setTimeout(resolve, 1000))]);
  }
  return { writes: times.length, write_p50_ms: +median(times).toFixed(1) };
}

/** Reloads the dashboard until `stop` resolves. */
async function reloadDashboard(admin: AdminClient, stop: Promise<void>) {
  let stopped = false;
  stop.then(() => stopped = true);
  const times: number[] = [];
  while (!stopped) {
    const started = performance.now();
    const { res } = await admin.page("/admin");
    if (res.status !== 200) throw new Error(`the dashboard answered ${res.status}`);
    times.push(performance.now() - started);
  }
  return { loads: times.length, load_p50_ms: +median(times).toFixed(1) };
}

/** The two comparisons on the scale data in `dataDir` (seeded by seedAdminScale). */
export async function readsWhileAdminsWork(
  options: {
    dataDir: string;
    env: Record<string, string>;
    password: string;
    cleanup: Cleanup;
    wrk: string;
    rounds: number;
    seconds: number;
    /** The kinds of admin write, done in turn. */
    writes: readonly AdminWrite[];
    /** Which comparisons to run (both unless told). */
    comparisons?: ReadonlyArray<"writes" | "dashboard">;
  },
) {
  const { dataDir, cleanup } = options;
  const { secret } = await withStore(
    dataDir,
    (store) =>
      createApiKey(store, { name: "scale reads", can_download: true, scope_mode: "all_projects" }),
  );
  const server: Server = await startService(dataDir, options.env, cleanup);
  const scripts = await Deno.makeTempDir({ prefix: "scale-reads-" });
  cleanup.add(() => Deno.remove(scripts, { recursive: true }));
  try {
    const admin = new AdminClient(httpSender([server.baseUrl]));
    if ((await admin.signIn("admin", options.password)).status !== 303) {
      throw new Error("sign-in failed");
    }
    const bigPage = (await admin.page("/admin/projects/big")).html;
    const ids = [...bigPage.matchAll(/data-release-id="(\d+)"/g)].map((match) => Number(match[1]));
    if (ids.length === 0) throw new Error("no release row on the project page");
    const mixed = join(scripts, "mixed.lua");
    const latest = join(scripts, "latest.lua");
    await Deno.writeTextFile(mixed, mixedScript(ids));
    await Deno.writeTextFile(latest, LATEST_SCRIPT);
    const wrk = async (script: string, seconds = options.seconds) =>
      figure(
        await runWrk(options.wrk, {
          url: server.baseUrl,
          headers: { authorization: `Bearer ${secret}` },
          connections: CONNECTIONS,
          threads: 1,
          durationSeconds: seconds,
          script,
        }),
      );
    /** A wrk run while `work` goes on; `work` is told to stop when wrk is done. */
    const during = async <T>(script: string, work: (stop: Promise<void>) => Promise<T>) => {
      const stop = Promise.withResolvers<void>();
      const working = work(stop.promise);
      try {
        const run = await wrk(script);
        stop.resolve();
        return { run, work: await working };
      } finally {
        stop.resolve();
        await working.catch(() => {});
      }
    };
    await wrk(mixed, 3); // warm-up: the caches, the project list
    const writes = { quiet: [] as RunFigure[], busy: [] as RunFigure[], writer: [] as unknown[] };
    const dashboard = { quiet: [] as RunFigure[], busy: [] as RunFigure[], loop: [] as unknown[] };
    const comparisons = options.comparisons ?? ["writes", "dashboard"];
    for (let round = 0; comparisons.includes("writes") && round < options.rounds; round++) {
      writes.quiet.push(await wrk(mixed));
      const withWrites = await during(
        mixed,
        (stop) => writeEverySecond(admin, { stop, kinds: options.writes }),
      );
      writes.busy.push(withWrites.run);
      writes.writer.push(withWrites.work);
    }
    for (let round = 0; comparisons.includes("dashboard") && round < options.rounds; round++) {
      dashboard.quiet.push(await wrk(latest));
      const withLoop = await during(latest, (stop) => reloadDashboard(admin, stop));
      dashboard.busy.push(withLoop.run);
      dashboard.loop.push(withLoop.work);
    }
    return {
      connections: CONNECTIONS,
      delay_ms_per_connection: READ_DELAY_MS,
      seconds_per_run: options.seconds,
      mixed_reads_under_writes: {
        ...summary(writes.quiet, writes.busy),
        kinds: options.writes,
        writer: writes.writer,
      },
      latest_under_dashboard_loop: {
        ...summary(dashboard.quiet, dashboard.busy),
        dashboard: dashboard.loop,
      },
    };
  } catch (error) {
    const exited = await Promise.race([server.status, new Promise((r) => setTimeout(r, 100))]);
    const how = exited === undefined ? "still running" : `exited: ${JSON.stringify(exited)}`;
    throw new Error(`${error}\nThe service (${how}) said:\n${server.output()}`);
  } finally {
    await server.stop();
  }
}
