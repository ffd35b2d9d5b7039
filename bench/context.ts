/** What every scenario gets: parameters, tools, the temp dir, and the shared basic service. */
import { join } from "node:path";
import { type BasicData, seedBasic } from "./data.ts";
import type { BenchParams, ScenarioName } from "./params.ts";
import { Cleanup, type Server, startService } from "./process.ts";
import type { Row, RowInput } from "./table.ts";

export const MiB = 1024 * 1024;
/** Throughput is in MB/s of 10^6 bytes. */
export const MB = 1_000_000;

export interface Tools {
  wrk: string | null;
  nginx: string | null;
  curl: string | null;
}

export const INSTALL_HINT: Record<keyof Tools, string> = {
  wrk: "apt-get install -y wrk",
  nginx: "apt-get install -y nginx",
  curl: "apt-get install -y curl",
};

export interface BenchContext {
  params: BenchParams;
  tools: Tools;
  /** The run's temp dir under ./data/ (the only place `deno task start` may read and write). */
  workDir: string;
  cleanup: Cleanup;
  /** Progress line on stderr. */
  log: (message: string) => void;
  /** The service on the basic data set (one project, release, key), started on first use. */
  basic: () => Promise<{ data: BasicData; server: Server }>;
}

export function createContext(
  params: BenchParams,
  tools: Tools,
  workDir: string,
  cleanup: Cleanup,
): BenchContext {
  const log = (message: string) => console.error(`· ${message}`);
  let basic: Promise<{ data: BasicData; server: Server }> | undefined;
  return {
    params,
    tools,
    workDir,
    cleanup,
    log,
    basic: () =>
      basic ??= (async () => {
        const dataDir = basicDataDir(workDir);
        log(`seeding the basic data set (1 release of ${params.artifactMiB} MiB, 1 key)`);
        const data = await seedBasic(dataDir, Math.round(params.artifactMiB * MiB));
        const server = await startService(dataDir, {}, cleanup);
        log(`service on the basic data set at ${server.baseUrl}`);
        return { data, server };
      })(),
  };
}

export interface Scenario {
  name: ScenarioName;
  /** The tools it cannot run without. */
  needs: Array<keyof Tools>;
  /** Its rows without figures: what the table shows when it is skipped or fails. */
  template: (params: BenchParams) => RowInput[];
  run: (ctx: BenchContext) => Promise<Row[]>;
}

/** A file path for a scenario's scratch data inside the run's temp dir. */
export function scratch(ctx: BenchContext, name: string): string {
  return join(ctx.workDir, name);
}

/** The data dir of the basic data set (one project, release and key). */
export function basicDataDir(workDir: string): string {
  return join(workDir, "basic");
}
