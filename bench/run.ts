/**
 * `deno task bench`: seeds its own data under ./data/bench-*, starts the
 * service (`deno task start`) and the baselines, runs every scenario, prints
 * the table and writes it as JSON. Exit code 1 when a scenario failed (a
 * missed target is a figure, not a failure); 2 on bad parameters.
 */
import { dirname, join } from "node:path";
import {
  type BenchContext,
  createContext,
  INSTALL_HINT,
  type Scenario,
  type Tools,
} from "./context.ts";
import { type BenchParams, ParamError, parseParams, USAGE } from "./params.ts";
import { Cleanup, PROJECT_ROOT, run, which } from "./process.ts";
import { largeData, latestRelease, projectList } from "./scenarios_api.ts";
import { download, upload } from "./scenarios_files.ts";
import { formatLayerCosts, layers } from "./scenarios_layers.ts";
import { writes } from "./scenarios_writes.ts";
import { electronFeed } from "./scenarios_feeds.ts";
import { signing } from "./scenarios_signing.ts";
import { rollout } from "./scenarios_rollouts.ts";
import { differential } from "./scenarios_differential.ts";
import { velopackDeltas } from "./scenarios_velopack.ts";
import { formatTable, makeRow, type Row, skippedRows } from "./table.ts";

const ALL: Scenario[] = [
  latestRelease,
  projectList,
  layers,
  download,
  largeData,
  upload,
  writes,
  electronFeed,
  signing,
  rollout,
  differential,
  velopackDeltas,
];

export interface BenchReport {
  generated_at: string;
  params: BenchParams;
  /** The run's temp dir (removed at the end unless `keep`). */
  work_dir: string;
  environment: Record<string, string | number | null>;
  rows: Row[];
  /** Scenarios that threw (their rows have no figures). */
  failed: string[];
}

async function version(tool: string | null, args: string[]): Promise<string | null> {
  if (tool === null) return null;
  const { stdout, stderr } = await run(tool, args).catch(() => ({ stdout: "", stderr: "" }));
  return (stdout + stderr).split("\n").find((line) => line.trim() !== "")?.trim() ?? null;
}

async function environment(tools: Tools): Promise<BenchReport["environment"]> {
  return {
    deno: Deno.version.deno,
    cpus: navigator.hardwareConcurrency,
    loadavg_1m: Deno.loadavg()[0],
    wrk: await version(tools.wrk, ["-v"]),
    nginx: await version(tools.nginx, ["-v"]),
    curl: await version(tools.curl, ["--version"]),
  };
}

async function runScenario(scenario: Scenario, ctx: BenchContext): Promise<Row[]> {
  const missing = scenario.needs.filter((tool) => ctx.tools[tool] === null);
  if (missing.length > 0) {
    const how = missing.map((tool) => `${tool} (${INSTALL_HINT[tool]})`).join(", ");
    return skippedRows(scenario.template(ctx.params), `skipped: not installed: ${how}`);
  }
  ctx.log(`scenario ${scenario.name}`);
  return await scenario.run(ctx);
}

export async function bench(params: BenchParams): Promise<BenchReport> {
  const tools: Tools = { wrk: which("wrk"), nginx: which("nginx"), curl: which("curl") };
  const skips: Record<keyof Tools, string> = {
    wrk: "the latest-release, project list, large data and rollout scenarios are skipped",
    nginx: "the download scenario runs without its nginx baseline",
    curl: "the download and upload scenarios are skipped",
  };
  for (const tool of Object.keys(tools) as Array<keyof Tools>) {
    if (tools[tool] === null) {
      console.error(
        `! ${tool} is not installed: ${skips[tool]}. ` +
          `Install it with \`${INSTALL_HINT[tool]}\` (Debian/Ubuntu).`,
      );
    }
  }
  // `deno task start` may only read and write ./data, so the temp dir lives there.
  const workDir = join(PROJECT_ROOT, "data", `bench-${crypto.randomUUID().slice(0, 8)}`);
  await Deno.mkdir(workDir, { recursive: true });
  const cleanup = new Cleanup();
  if (params.keep) console.error(`· keeping the data in ${workDir}`);
  else cleanup.add(() => Deno.remove(workDir, { recursive: true }));
  const onSignal = () => {
    console.error("\ninterrupted: stopping the servers and removing the data");
    cleanup.run().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);

  const ctx = createContext(params, tools, workDir, cleanup);
  const rows: Row[] = [];
  const failed: string[] = [];
  try {
    for (const scenario of ALL.filter((s) => params.scenarios.includes(s.name))) {
      try {
        rows.push(...await runScenario(scenario, ctx));
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        console.error(`! scenario ${scenario.name} failed: ${message}`);
        failed.push(scenario.name);
        const firstLine = message.split("\n")[0];
        rows.push(
          ...scenario.template(params).map((row) =>
            makeRow({ ...row, service: null, baseline: null, note: `failed: ${firstLine}` })
          ),
        );
      }
    }
  } finally {
    await cleanup.run();
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
  return {
    generated_at: new Date().toISOString(),
    params,
    work_dir: workDir,
    environment: await environment(tools),
    rows,
    failed,
  };
}

if (import.meta.main) {
  let params;
  try {
    params = parseParams(Deno.args);
  } catch (error) {
    if (!(error instanceof ParamError)) throw error;
    console.error(`${error.message}\n\n${USAGE}`);
    Deno.exit(2);
  }
  if (params === "help") {
    console.log(USAGE);
    Deno.exit(0);
  }
  const report = await bench(params);
  console.log(formatTable(report.rows));
  const costs = formatLayerCosts(report.rows);
  if (costs !== null) console.log(`\n${costs}`);
  await Deno.mkdir(dirname(params.out), { recursive: true });
  await Deno.writeTextFile(params.out, JSON.stringify(report, null, 2) + "\n");
  console.log(`\nresults written to ${params.out}`);
  Deno.exit(report.failed.length > 0 ? 1 : 0);
}
