/**
 * A fleet of installs on one API key, each from its own source address in
 * 127.0.0.0/8, against the real service at the default client rate limit
 * (120 a minute, burst 60): every install asks for the latest release, first
 * alone, then again while one more address floods the same key.
 *
 *   deno run -A bench/fleet_rate_limit.ts [installs] [store] [root]
 *
 * `installs` defaults to 10000, `store` (APP_RATE_LIMIT_STORE) to memory;
 * `root` runs the service of another checkout on the same data (before/after
 * figures). Prints one JSON object. Deno.connect cannot choose its source
 * address, so the requests go through `node:http` with `localAddress`.
 */
import http from "node:http";
import { join } from "node:path";
import { seedBasic } from "./data.ts";
import { Cleanup, type Server, serverRssMiB, startService, startServiceIn } from "./process.ts";

/** The source address of install `index`: 127.10.0.1, 127.10.0.2, … (254 a /24, never .0 or .255). */
export function installAddress(index: number): string {
  const perBlock = 254 * 256;
  const a = 10 + Math.floor(index / perBlock);
  const b = Math.floor(index / 254) % 256;
  const c = 1 + (index % 254);
  return `127.${a}.${b}.${c}`;
}

/** The address that floods the key in `runFleet` (outside the installs' range). */
export const FLOOD_ADDRESS = "127.9.9.9";

export interface Answered {
  status: number;
  retryAfter: string | null;
  ms: number;
}

/** One GET from `localAddress` on a connection of its own; the body is read and dropped. */
export function getFrom(
  { url, localAddress, headers }: {
    url: URL;
    localAddress: string;
    headers: Record<string, string>;
  },
): Promise<Answered> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      headers,
      localAddress,
      agent: false,
    }, (response) => {
      response.on("data", () => {});
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          retryAfter: (response.headers["retry-after"] as string | undefined) ?? null,
          ms: performance.now() - started,
        }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end();
  });
}

export interface Tally {
  requests: number;
  /** Answers by status code. */
  statuses: Record<string, number>;
  /** 429 answers without an integer Retry-After ≥ 1. */
  badRetryAfter: number;
  p50Ms: number;
  p99Ms: number;
  seconds: number;
}

function tally(answers: Answered[], seconds: number): Tally {
  const statuses: Record<string, number> = {};
  for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1;
  const times = answers.map(({ ms }) => ms).sort((a, b) => a - b);
  const at = (q: number) =>
    times.length === 0 ? 0 : times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return {
    requests: answers.length,
    statuses,
    badRetryAfter:
      answers.filter(({ status, retryAfter }) =>
        status === 429 && !/^[1-9]\d*$/.test(retryAfter ?? "")
      ).length,
    p50Ms: +at(0.5).toFixed(2),
    p99Ms: +at(0.99).toFixed(2),
    seconds: +seconds.toFixed(2),
  };
}

export interface FleetOptions {
  baseUrl: string;
  /** The app's one key, which every install and the flood present. */
  key: string;
  /** The path every install asks for (the latest release). */
  path: string;
  installs: number;
  /** Installs asking at once. */
  concurrency: number;
  /** With a flood: requests from FLOOD_ADDRESS at once, until the fleet is done. */
  flood?: { concurrency: number };
  /** The first install's index (a second round asks from the same addresses). */
  firstInstall?: number;
}

/** Every install asks once, from its own address; the flood, if any, asks all the while. */
export async function runFleet(options: FleetOptions): Promise<{ fleet: Tally; flood?: Tally }> {
  const url = new URL(options.path, options.baseUrl);
  const headers = (install: string) => ({
    authorization: `Bearer ${options.key}`,
    "x-install-id": install,
  });
  const first = options.firstInstall ?? 0;
  let next = 0;
  let done = false;
  const started = performance.now();
  const floodAnswers: Answered[] = [];
  const flooders = Array.from({ length: options.flood?.concurrency ?? 0 }, async () => {
    while (!done) {
      floodAnswers.push(
        await getFrom({ url, localAddress: FLOOD_ADDRESS, headers: headers("flood") }),
      );
    }
  });
  // The flood is under way before the fleet starts.
  if (options.flood) {
    while (floodAnswers.length < 100) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const fleetStarted = performance.now();
  const fleetAnswers: Answered[] = [];
  const workers = Array.from({ length: options.concurrency }, async () => {
    while (next < options.installs) {
      const index = first + next++;
      fleetAnswers.push(
        await getFrom({
          url,
          localAddress: installAddress(index),
          headers: headers(`install-${index}`),
        }),
      );
    }
  });
  try {
    await Promise.all(workers);
  } finally {
    done = true;
  }
  const fleetSeconds = (performance.now() - fleetStarted) / 1000;
  await Promise.all(flooders);
  return {
    fleet: tally(fleetAnswers, fleetSeconds),
    flood: options.flood ? tally(floodAnswers, (performance.now() - started) / 1000) : undefined,
  };
}

async function main(args: string[]): Promise<void> {
  const installs = Number(args[0] ?? 10_000);
  const store = args[1] ?? "memory";
  const root = args[2];
  if (!Number.isInteger(installs) || installs < 1 || !["memory", "kv"].includes(store)) {
    console.error("usage: deno run -A bench/fleet_rate_limit.ts [installs] [memory|kv] [root]");
    Deno.exit(2);
  }
  const cleanup = new Cleanup();
  try {
    const dataDir = await Deno.makeTempDir({ prefix: "uds-bench-fleet-" });
    cleanup.add(() => Deno.remove(dataDir, { recursive: true }));
    const data = await seedBasic(join(dataDir, "data"), 1024);
    const env = {
      APP_CLIENT_RATE_LIMIT_PER_MINUTE: "120",
      APP_CLIENT_RATE_LIMIT_BURST: "60",
      APP_RATE_LIMIT_STORE: store,
    };
    const server: Server = root === undefined
      ? await startService(join(dataDir, "data"), env, cleanup)
      : await startServiceIn({ root, dataDir: join(dataDir, "data"), env, cleanup });
    const common = {
      baseUrl: server.baseUrl,
      key: data.key,
      path: `/api/v1/projects/${data.slug}/releases/latest`,
      installs,
      concurrency: 32,
    };
    const alone = await runFleet(common);
    const flooded = await runFleet({ ...common, flood: { concurrency: 8 } });
    console.log(JSON.stringify(
      {
        installs,
        store,
        root: root ?? null,
        rule: "120 a minute, burst 60 (the defaults)",
        alone: alone.fleet,
        with_flood: flooded.fleet,
        flood: flooded.flood,
        server_rss_mib: await serverRssMiB(server.pid),
      },
      null,
      2,
    ));
  } finally {
    await cleanup.run();
  }
}

if (import.meta.main) await main(Deno.args);
