/**
 * Runs the real service (`deno task start`) as a child process on a free
 * port, with its state in a temporary directory: the start task may write
 * exactly its APP_DATA_DIR (tools/data_paths.ts), wherever that is.
 */
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The password of the account `admin` that startServer gives the service unless told another. */
export const SERVER_ADMIN_PASSWORD = "test-password-123";

export interface ServerProcess extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`, the port the server picked (it starts with APP_PORT=0). */
  baseUrl: string;
  port: number;
  /** The pid of the process started (`deno task`, or the `via` command that execs it). */
  pid: number;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
  /** Its stdout so far, line by line (the log lines). */
  lines: () => string[];
  /** Settles when the process has exited. */
  exited: Promise<Deno.CommandStatus>;
  /** The exit code, or undefined while it runs. */
  exitCode: () => number | undefined;
  kill: (signal?: Deno.Signal) => void;
  /** SIGTERM unless it already exited; settles with the exit status once its output is read. */
  stop: () => Promise<Deno.CommandStatus>;
  /** kill -9 of the server process itself (not the task runner): a crash, no shutdown. */
  crash: () => Promise<void>;
}

/**
 * A fresh temporary directory for one test's data dirs and backups (never under ./data, the
 * state of a service started from this checkout).
 */
export function makeDataTempDir(prefix: string): Promise<string> {
  return Deno.makeTempDir({ prefix: `uds-${prefix}-` });
}

/**
 * Removes `dir` when the scope ends (`await using`): declared right after the
 * directory is made, it runs after whatever the test declared later (a server).
 */
export function removedAtEnd(dir: string): AsyncDisposable {
  return { [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }).catch(() => {}) };
}

/** Runs a `deno task …` to completion and returns its exit code and output. */
export async function runTask(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  // The reference client keeps its install id in a temporary state dir, never the user's.
  const state: Record<string, string> = args[0] === "client"
    ? { UPDATE_STATE_DIR: clientStateDir() }
    : {};
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", ...args],
    cwd: PROJECT_ROOT,
    env: { NO_COLOR: "1", ...state, ...env },
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

let sharedClientState: string | undefined;

/**
 * A state dir for the reference client (its install id) that this test
 * process's client runs share, removed when the process ends.
 */
export function clientStateDir(): string {
  if (sharedClientState === undefined) {
    const dir = Deno.makeTempDirSync({ prefix: "uds-client-state-" });
    sharedClientState = dir;
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
  }
  // A test file that ended before may have removed it (its unload): made again if so, since the
  // client refuses a state dir it was given and cannot write (exit 9).
  Deno.mkdirSync(sharedClientState, { recursive: true });
  return sharedClientState;
}

const LISTENING = /listening on http:\/\/[^:\s"]+:(\d+)/;
const START_TIMEOUT_MS = 30_000;

/**
 * Starts `deno task start` with its state in `dataDir` (see makeDataTempDir) on a
 * port the server picks itself (APP_PORT=0), and resolves once it logged the
 * port it listens on. `await using` stops it at the end of the scope.
 */
export async function startServer(
  dataDir: string,
  env: Record<string, string> = {},
  {
    via = [],
    task = "start",
    listeners = 1,
    cwd = PROJECT_ROOT,
  }: {
    /** The deno task to run (`start:all-cores` for several workers on one port). */
    task?: string;
    /** How many "listening on" lines to wait for: one per worker. */
    listeners?: number;
    /**
     * A command that runs `deno task -q start` (given as its last arguments):
     * `["setsid"]` for a process group of its own, or
     * `["bash", "-c", 'ulimit -n 256; exec "$0" "$@"']` for a descriptor limit.
     */
    via?: string[];
    /** The checkout to start it in (a copy of the repository; `dataDir` may be its ./data). */
    cwd?: string;
  } = {},
): Promise<ServerProcess> {
  const deno = [Deno.execPath(), "task", "-q", task];
  const [command, ...args] = [...via, ...deno];
  const child = new Deno.Command(command, {
    args,
    cwd,
    env: {
      NO_COLOR: "1",
      APP_DATA_DIR: dataDir,
      APP_PORT: "0",
      APP_HOST: "127.0.0.1",
      APP_ADMIN_PASSWORD: SERVER_ADMIN_PASSWORD,
      APP_CLIENT_RATE_LIMIT_BURST: "100000",
      APP_CLIENT_RATE_LIMIT_PER_MINUTE: "100000",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  let output = "";
  const stdoutLines: string[] = [];
  const listening = Promise.withResolvers<number>();
  const ports: number[] = [];
  let code: number | undefined;
  const exited = child.status.then((status) => {
    code = status.code;
    return status;
  });
  const readStdout = async () => {
    let partial = "";
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      output += text;
      const parts = (partial + text).split("\n");
      partial = parts.pop()!;
      for (const line of parts) {
        stdoutLines.push(line);
        const port = LISTENING.exec(line)?.[1];
        if (port) ports.push(Number(port));
        if (ports.length === listeners) listening.resolve(ports[0]);
      }
    }
    if (partial) stdoutLines.push(partial);
  };
  const readStderr = async () => {
    for await (const text of child.stderr.pipeThrough(new TextDecoderStream())) output += text;
  };
  const drained = Promise.all([readStdout(), readStderr()]).catch(() => {});
  const kill = (signal: Deno.Signal = "SIGTERM") => {
    if (code !== undefined) return;
    try {
      child.kill(signal);
    } catch {
      // exited in between
    }
  };
  const stop = async () => {
    kill("SIGTERM");
    const status = await exited;
    await drained;
    return status;
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const port = await Promise.race([
      listening.promise,
      exited.then(async ({ code }) => {
        await drained;
        throw new Error(`server exited with code ${code} before listening:\n${output}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`server did not start in ${START_TIMEOUT_MS} ms:\n${output}`)),
          START_TIMEOUT_MS,
        );
      }),
    ]);
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      port,
      pid: child.pid,
      output: () => output,
      lines: () => stdoutLines,
      exited,
      exitCode: () => code,
      kill,
      stop,
      crash: async () => {
        Deno.kill(await serverPid(child.pid), "SIGKILL");
        await exited;
      },
      [Symbol.asyncDispose]: async () => {
        await stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
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

/**
 * The pid of the `deno run … main.ts` child of the `deno task` process `taskPid`
 * (by `pgrep`: the test task may not list /proc itself).
 */
async function serverPid(taskPid: number): Promise<number> {
  const { stdout } = await new Deno.Command("pgrep", {
    args: ["-P", String(taskPid), "-f", "main.ts"],
    stdout: "piped",
    stderr: "null",
  }).output();
  const pid = Number(new TextDecoder().decode(stdout).trim().split("\n")[0]);
  if (!pid) throw new Error(`no server process under deno task ${taskPid}`);
  return pid;
}
