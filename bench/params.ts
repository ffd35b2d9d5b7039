/**
 * Bench parameters: each one a flag (`--duration 10` or `--duration=10`) or
 * an environment variable (`BENCH_DURATION=10`); a flag wins over the
 * environment, the environment over the default.
 */
import { parseArgs } from "node:util";
import { join, resolve } from "node:path";
import { PROJECT_ROOT } from "./process.ts";

export const SCENARIOS = [
  "latest",
  "projects",
  "layers",
  "download",
  "large",
  "upload",
  "writes",
  "feed",
  "signing",
  "rollout",
  "differential",
  "velopack",
] as const;
export type ScenarioName = typeof SCENARIOS[number];

export interface BenchParams {
  /** Seconds of each measured wrk run. */
  duration: number;
  /** Seconds of an unmeasured wrk run before each measured one (JIT, caches). */
  warmup: number;
  connections: number;
  threads: number;
  /** Interleaved runs of service and baseline in `latest` and `projects` (each figure: the best). */
  runs: number;
  /** Rounds of the layers scenario (each figure is the least of them). */
  rounds: number;
  /** Projects in the project-list data set, and how many of them the key may see. */
  projects: number;
  allowList: number;
  /** Size of the download artifact, and the concurrent clients of the second download run. */
  artifactMiB: number;
  downloadClients: number;
  /** Downloads of each figure of the download scenario, the service's interleaved with nginx's. */
  downloadRounds: number;
  /** The large data set of the "large" scenario. */
  releases: number;
  keys: number;
  /** Size of the uploaded file. */
  uploadMiB: number;
  /** Unpacked size of each Velopack package of the velopack scenario. */
  velopackMiB: number;
  /** The most parallel admin sessions of the writes scenario (it runs 2, 8, 16 … up to it). */
  writeSessions: number;
  /** Uploads (and keys) of each session in each round of the writes scenario. */
  writesPerSession: number;
  /** Where the JSON results go. */
  out: string;
  scenarios: ScenarioName[];
  /** Keep the temp data dir (under ./data/bench-*) instead of removing it. */
  keep: boolean;
}

interface Spec {
  key: keyof BenchParams;
  flag: string;
  env: string;
  fallback: number;
  integer: boolean;
  help: string;
}

const NUMBERS: Spec[] = [
  {
    key: "writeSessions",
    flag: "write-sessions",
    env: "BENCH_WRITE_SESSIONS",
    fallback: 32,
    integer: true,
    help: "most parallel admin sessions of the writes scenario (2, 8, 16, … up to it)",
  },
  {
    key: "writesPerSession",
    flag: "writes-per-session",
    env: "BENCH_WRITES_PER_SESSION",
    fallback: 20,
    integer: true,
    help: "uploads and keys per session in each round of the writes scenario",
  },
  {
    key: "duration",
    flag: "duration",
    env: "BENCH_DURATION",
    fallback: 10,
    integer: true,
    help: "seconds per wrk run",
  },
  {
    key: "warmup",
    flag: "warmup",
    env: "BENCH_WARMUP",
    fallback: 2,
    integer: true,
    help: "seconds of unmeasured wrk warm-up (0: none)",
  },
  {
    key: "connections",
    flag: "connections",
    env: "BENCH_CONNECTIONS",
    fallback: 64,
    integer: true,
    help: "wrk connections",
  },
  {
    key: "threads",
    flag: "threads",
    env: "BENCH_THREADS",
    fallback: 1,
    integer: true,
    help: "wrk threads",
  },
  {
    key: "runs",
    flag: "runs",
    env: "BENCH_RUNS",
    fallback: 2,
    integer: true,
    help:
      "interleaved wrk runs of service and baseline in the API scenarios (each figure: the best)",
  },
  {
    key: "rounds",
    flag: "rounds",
    env: "BENCH_ROUNDS",
    fallback: 3,
    integer: true,
    help: "rounds of the layers scenario (each figure: the least)",
  },
  {
    key: "projects",
    flag: "projects",
    env: "BENCH_PROJECTS",
    fallback: 1000,
    integer: true,
    help: "projects in the project-list data set",
  },
  {
    key: "allowList",
    flag: "allow-list",
    env: "BENCH_ALLOW_LIST",
    fallback: 50,
    integer: true,
    help: "projects on that key's allow list",
  },
  {
    key: "artifactMiB",
    flag: "artifact-mib",
    env: "BENCH_ARTIFACT_MIB",
    fallback: 256,
    integer: false,
    help: "download artifact size in MiB",
  },
  {
    key: "downloadClients",
    flag: "download-clients",
    env: "BENCH_DOWNLOAD_CLIENTS",
    fallback: 8,
    integer: true,
    help: "concurrent curl clients of the second download run",
  },
  {
    key: "downloadRounds",
    flag: "download-rounds",
    env: "BENCH_DOWNLOAD_ROUNDS",
    fallback: 5,
    integer: true,
    help: "rounds of each download figure, service and nginx interleaved (the median is kept)",
  },
  {
    key: "releases",
    flag: "releases",
    env: "BENCH_RELEASES",
    fallback: 10_000,
    integer: true,
    help: "releases in the large data set's project",
  },
  {
    key: "keys",
    flag: "keys",
    env: "BENCH_KEYS",
    fallback: 100_000,
    integer: true,
    help: "API keys in the large data set",
  },
  {
    key: "uploadMiB",
    flag: "upload-mib",
    env: "BENCH_UPLOAD_MIB",
    fallback: 1024,
    integer: false,
    help: "uploaded file size in MiB",
  },
  {
    key: "velopackMiB",
    flag: "velopack-mib",
    env: "BENCH_VELOPACK_MIB",
    fallback: 300,
    integer: false,
    help: "unpacked size of each Velopack package in MiB (300: about 150 MB zipped)",
  },
];

export const USAGE = [
  "deno task bench [options]   (every option also as an environment variable)",
  "",
  ...NUMBERS.map((s) =>
    `  --${s.flag.padEnd(17)} ${s.env.padEnd(23)} ${s.help} (default ${s.fallback})`
  ),
  `  --${"out".padEnd(17)} ${
    "BENCH_OUT".padEnd(23)
  } JSON results file (default bench/results.json)`,
  `  --${"scenarios".padEnd(17)} ${"BENCH_SCENARIOS".padEnd(23)} comma-separated subset of ${
    SCENARIOS.join(",")
  } (default all)`,
  `  --${"keep".padEnd(17)} ${"BENCH_KEEP=1".padEnd(23)} keep the temp data dir ./data/bench-*`,
].join("\n");

export class ParamError extends Error {}

export function parseParams(
  args: string[],
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): BenchParams | "help" {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        ...Object.fromEntries(NUMBERS.map((s) => [s.flag, { type: "string" as const }])),
        out: { type: "string" },
        scenarios: { type: "string" },
        keep: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new ParamError(error instanceof Error ? error.message : String(error));
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) return "help";
  const pick = (flag: string, envName: string) => {
    const value = values[flag] ?? env(envName);
    return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
  };

  const params: Record<string, unknown> = {};
  for (const spec of NUMBERS) {
    const raw = pick(spec.flag, spec.env);
    if (raw === undefined) {
      params[spec.key] = spec.fallback;
      continue;
    }
    const value = Number(raw);
    const minimum = spec.key === "warmup" ? 0 : spec.integer ? 1 : Number.MIN_VALUE;
    if (!Number.isFinite(value) || value < minimum || (spec.integer && !Number.isInteger(value))) {
      throw new ParamError(
        `--${spec.flag} (${spec.env}) must be ${
          spec.integer ? "a whole number" : "a number"
        } of at least ${spec.key === "warmup" ? 0 : spec.integer ? 1 : "above 0"}, got "${raw}"`,
      );
    }
    params[spec.key] = value;
  }
  if ((params.allowList as number) > (params.projects as number)) {
    throw new ParamError("--allow-list must not exceed --projects");
  }

  const scenarioList = pick("scenarios", "BENCH_SCENARIOS");
  const scenarios = scenarioList === undefined
    ? [...SCENARIOS]
    : scenarioList.split(",").map((name) => name.trim()).filter(Boolean);
  for (const name of scenarios) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      throw new ParamError(`unknown scenario "${name}"; known: ${SCENARIOS.join(", ")}`);
    }
  }
  const keepEnv = env("BENCH_KEEP");
  const out = pick("out", "BENCH_OUT");
  return {
    ...params,
    // `deno task` runs in the project root; a relative path means the caller's directory.
    out: out === undefined
      ? join(PROJECT_ROOT, "bench", "results.json")
      : resolve(env("INIT_CWD") ?? Deno.cwd(), out),
    scenarios: scenarios as ScenarioName[],
    keep: values.keep === true || (keepEnv !== undefined && /^(1|true|yes|on)$/i.test(keepEnv)),
  } as BenchParams;
}
