/** Runs wrk with `--latency` and reads its report. */
import { run } from "./process.ts";

export interface WrkResult {
  requests: number;
  requestsPerSec: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  /** Responses with a status outside 2xx/3xx. */
  non2xx: number;
  /** connect + read + write + timeout errors. */
  socketErrors: number;
}

const TIME_UNITS_MS: Record<string, number> = {
  us: 0.001,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** "812.00us", "1.23ms", "2.00s" → milliseconds. */
export function parseWrkTime(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m|h)$/.exec(text.trim());
  if (!match) throw new Error(`not a wrk time: "${text}"`);
  return Number(match[1]) * TIME_UNITS_MS[match[2]];
}

/** Parses the report of `wrk --latency`. Throws when a figure is missing. */
export function parseWrkOutput(output: string): WrkResult {
  const find = (pattern: RegExp, what: string): RegExpExecArray => {
    const match = pattern.exec(output);
    if (!match) throw new Error(`wrk output has no ${what}:\n${output}`);
    return match;
  };
  const percentile = (p: number) =>
    parseWrkTime(
      find(new RegExp(`^\\s+${p}%\\s+([\\d.]+(?:us|ms|s|m|h))\\s*$`, "m"), `${p}% latency`)[1],
    );
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    output,
  );
  return {
    requests: Number(find(/^\s*(\d+) requests in /m, "request count")[1]),
    requestsPerSec: Number(find(/^Requests\/sec:\s+([\d.]+)/m, "Requests/sec")[1]),
    p50Ms: percentile(50),
    p90Ms: percentile(90),
    p99Ms: percentile(99),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    socketErrors: errors ? errors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}

export interface WrkOptions {
  url: string;
  headers?: Record<string, string>;
  durationSeconds: number;
  connections: number;
  threads: number;
  /** A Lua script for wrk (`-s`): which requests to send, and how fast (its `delay`). */
  script?: string;
}

/**
 * One wrk run. Fails when any response was not 2xx/3xx or a socket error
 * occurred: a figure of error responses would measure the wrong thing.
 */
export async function runWrk(wrk: string, options: WrkOptions): Promise<WrkResult> {
  const args = [
    "--latency",
    "-t",
    String(options.threads),
    "-c",
    String(options.connections),
    "-d",
    `${options.durationSeconds}s`,
    "--timeout",
    "5s",
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    args.push("-H", `${name}: ${value}`);
  }
  if (options.script !== undefined) args.push("-s", options.script);
  args.push(options.url);
  const { code, stdout, stderr } = await run(wrk, args);
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${stderr}${stdout}`);
  const result = parseWrkOutput(stdout);
  if (result.requests === 0) throw new Error(`wrk completed no request:\n${stdout}`);
  if (result.non2xx > 0) {
    throw new Error(`${result.non2xx} of ${result.requests} responses were errors:\n${stdout}`);
  }
  if (result.socketErrors > 0) {
    throw new Error(`wrk reports ${result.socketErrors} socket errors:\n${stdout}`);
  }
  return result;
}
