/**
 * Runs the real service (`deno task start`) as a child process on a free
 * port, with its state under ./data/ (the only place the start task may write).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface ServerProcess {
  baseUrl: string;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
  stop: () => Promise<void>;
}

/** A fresh, unique directory under ./data/ for one test's data dirs and backups. */
export async function makeDataTempDir(prefix: string): Promise<string> {
  const dir = join(PROJECT_ROOT, "data", `${prefix}-${crypto.randomUUID().slice(0, 8)}`);
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

/** Runs a `deno task …` to completion and returns its exit code and output. */
export async function runTask(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", ...args],
    cwd: PROJECT_ROOT,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

export async function startServer(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "start"],
    cwd: PROJECT_ROOT,
    env: {
      NO_COLOR: "1",
      APP_DATA_DIR: dataDir,
      APP_PORT: "0",
      APP_HOST: "127.0.0.1",
      APP_ADMIN_PASSWORD: "test-password-123",
      APP_CLIENT_RATE_LIMIT_BURST: "100000",
      APP_CLIENT_RATE_LIMIT_PER_MINUTE: "100000",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  const log: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not start:\n${log.join("")}`)),
      30_000,
    );
    const decoder = new TextDecoder();
    (async () => {
      for await (const chunk of child.stdout) {
        log.push(decoder.decode(chunk));
        const match = /listening on http:\/\/[^:]+:(\d+)/.exec(log.join(""));
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      }
      clearTimeout(timer);
      reject(new Error(`server exited before listening:\n${log.join("")}`));
    })().catch(reject);
    (async () => {
      for await (const chunk of child.stderr) log.push(decoder.decode(chunk));
    })().catch(() => {});
  });

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    output: () => log.join(""),
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/**
 * `count` instances of the service on one data dir (one KV file, one
 * artifacts dir), started one after another, as behind a load balancer.
 */
export async function startInstances(
  count: number,
  dataDir: string,
  env: Record<string, string> = {},
): Promise<ServerProcess[]> {
  const servers: ServerProcess[] = [];
  try {
    for (let i = 0; i < count; i++) servers.push(await startServer(dataDir, env));
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()));
    throw error;
  }
  return servers;
}
