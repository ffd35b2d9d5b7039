/**
 * Child processes of the bench: the service (`deno task start`), the bare
 * Deno baseline, nginx, and one-shot tools (wrk, curl). Every long-running
 * child is registered in a `Cleanup` so that a failure or Ctrl-C stops it.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

const decoder = new TextDecoder();

/** The absolute path of an executable on PATH, or null. */
export function which(name: string): string | null {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (!dir) continue;
    const path = join(dir, name);
    try {
      const info = Deno.statSync(path);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return path;
    } catch {
      // not here
    }
  }
  return null;
}

/** Stack of undo steps, run newest first; safe to run twice. */
export class Cleanup {
  #steps: Array<() => Promise<void> | void> = [];

  add(step: () => Promise<void> | void): void {
    this.#steps.push(step);
  }

  async run(): Promise<void> {
    while (this.#steps.length > 0) {
      const step = this.#steps.pop()!;
      try {
        await step();
      } catch (error) {
        console.error(`cleanup step failed: ${error instanceof Error ? error.message : error}`);
      }
    }
  }
}

/** Runs a command to completion. */
export async function run(
  cmd: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(cmd, {
    args,
    env: options.env,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/**
 * Runs a command to completion under `/usr/bin/time -f %M`: its answer (stderr without the time's
 * last line), its wall time in ms and its peak resident memory in KiB.
 */
export async function timedPeak(
  cmd: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string; ms: number; peakKiB: number }> {
  const started = performance.now();
  const out = await run("/usr/bin/time", ["-f", "%M", cmd, ...args]);
  const ms = performance.now() - started;
  const lines = out.stderr.trimEnd().split("\n");
  const peakKiB = Number(lines.pop());
  return { code: out.code, stdout: out.stdout, stderr: lines.join("\n"), ms, peakKiB };
}

/**
 * The directory `npm install <spec>` went to (its packages in `node_modules/` inside), installed
 * once per machine under the temp dir and kept for the next run. Its name holds the spec and
 * `prepare.version`, so a changed prepare step makes a fresh install. Runs take turns through a
 * lock file beside it (`<dir>.lock`, kept): the first installs into a fresh directory beside its
 * place, `prepare`s it there, marks it `ready` and renames it into place whole, so a reader sees it
 * complete or not at all; the others then find it and use it. `before` runs only when it is not
 * installed yet.
 */
export async function npmInstallOnce(
  spec: string,
  options: {
    npmArgs?: string[];
    before?: () => Promise<void>;
    /** Run on the fresh install before it is put in place; `version` names this step. */
    prepare?: { version: string; run: (fresh: string) => Promise<void> };
  } = {},
): Promise<string> {
  const root = Deno.env.get("TMPDIR") ?? "/tmp";
  const prepared = options.prepare === undefined ? "" : `-prepared-${options.prepare.version}`;
  const name = `uds-${spec.replace(/^@/, "").replace(/[@/]/g, "-")}${prepared}`;
  const dir = join(root, name);
  const installed = () => Deno.stat(join(dir, "ready")).then(() => true, () => false);
  if (await installed()) return dir;
  const lock = await Deno.open(`${dir}.lock`, { create: true, write: true });
  try {
    await lock.lock(true);
    if (await installed()) return dir;
    await options.before?.();
    const fresh = await Deno.makeTempDir({ dir: root, prefix: `${name}.partial-` });
    try {
      const out = await run("npm", [
        "install",
        "--no-audit",
        "--no-fund",
        ...options.npmArgs ?? [],
        "--prefix",
        fresh,
        spec,
      ]);
      if (out.code !== 0) throw new Error(`npm install ${spec}: ${out.stderr}`);
      await options.prepare?.run(fresh);
      await Deno.writeTextFile(join(fresh, "ready"), spec);
      // Only the lock's holder puts a copy in place, and whole: a folder there without `ready` is
      // a half one from an older layout (or one a temp cleaner emptied), moved aside and removed.
      const stale = `${fresh}.stale`;
      await Deno.rename(dir, stale).then(() => Deno.remove(stale, { recursive: true }), () => {});
      await Deno.rename(fresh, dir);
    } finally {
      await Deno.remove(fresh, { recursive: true }).catch(() => {});
    }
  } finally {
    lock.close();
  }
  if (!await installed()) throw new Error(`${spec} could not be put in place at ${dir}`);
  return dir;
}

/** The last `limit` characters written to a stream, kept for error messages. */
class Tail {
  text = "";
  constructor(readonly limit = 8000) {}
  push(chunk: string) {
    this.text = (this.text + chunk).slice(-this.limit);
  }
}

export interface Server {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  port: number;
  /** Pid of the spawned process (for the service: `deno task`, not the server itself). */
  pid: number;
  /** Recent output, for error messages. */
  output: () => string;
  /** Settles when the child exits. */
  status: Promise<Deno.CommandStatus>;
  stop: () => Promise<void>;
}

/**
 * Spawns a long-running child, reads its stdout until `ready` matches, then
 * keeps draining stdout so that a chatty access log never blocks the child.
 */
async function spawnServer(
  name: string,
  cmd: string,
  args: string[],
  options: {
    env?: Record<string, string>;
    /** Matches the stdout line that says the child listens; group 1 is the port. */
    ready?: RegExp;
    /** The port, when known beforehand (then there is no ready line to wait for). */
    port?: number;
    timeoutMs?: number;
    cleanup: Cleanup;
    /** The checkout to run in (PROJECT_ROOT unless given). */
    cwd?: string;
  },
): Promise<Server> {
  const child = new Deno.Command(cmd, {
    args,
    cwd: options.cwd ?? PROJECT_ROOT,
    env: { NO_COLOR: "1", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const tail = new Tail();
  let port = options.port ?? 0;
  let resolveReady: () => void = () => {};
  const readyNow = new Promise<void>((resolve) => resolveReady = resolve);
  let ready = options.ready === undefined;
  if (ready) resolveReady();
  const drained = Promise.all([
    (async () => {
      // stdout: scanned for the ready line, then only drained (the access log goes nowhere).
      let pending = "";
      for await (const chunk of child.stdout) {
        if (ready) continue;
        const text = decoder.decode(chunk, { stream: true });
        tail.push(text);
        pending += text;
        const match = options.ready!.exec(pending);
        if (match) {
          port = Number(match[1]);
          ready = true;
          resolveReady();
        }
      }
    })(),
    (async () => {
      // stderr: kept (its tail) for error messages.
      for await (const chunk of child.stderr) tail.push(decoder.decode(chunk, { stream: true }));
    })(),
  ]).catch(() => {});

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    const killer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }, 15_000);
    await child.status;
    clearTimeout(killer);
    await drained;
  };
  options.cleanup.add(stop);

  const timeoutMs = options.timeoutMs ?? 30_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    readyNow.then(() => "ready" as const),
    child.status.then(() => "exited" as const),
    new Promise<"timeout">((resolve) => timer = setTimeout(() => resolve("timeout"), timeoutMs)),
  ]);
  clearTimeout(timer);
  if (outcome !== "ready") {
    await stop();
    throw new Error(
      `${name} ${
        outcome === "exited" ? "exited before it was ready" : "did not start in time"
      }:\n` +
        tail.text,
    );
  }
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid,
    output: () => tail.text,
    status: child.status,
    stop,
  };
}

/** The service through `deno task start`, on a free port with the given data dir. */
export function startService(
  dataDir: string,
  env: Record<string, string>,
  cleanup: Cleanup,
): Promise<Server> {
  return spawnServer("the service", Deno.execPath(), ["task", "-q", "start"], {
    env: { ...serviceEnv(dataDir), ...env },
    ready: SERVICE_READY,
    cleanup,
  });
}

/**
 * The service of another checkout (`root`, e.g. an export of an older commit),
 * for before/after figures measured in one run on the same data.
 */
export function startServiceIn(
  { root, dataDir, env, cleanup }: {
    root: string;
    dataDir: string;
    env: Record<string, string>;
    cleanup: Cleanup;
  },
): Promise<Server> {
  return spawnServer(`the service in ${root}`, Deno.execPath(), ["task", "-q", "start"], {
    env: { ...serviceEnv(dataDir), ...env },
    ready: SERVICE_READY,
    cleanup,
    cwd: root,
  });
}

/** Resident memory (MiB) of the server under `deno task` (the task's child), or null. */
export async function serverRssMiB(taskPid: number): Promise<number | null> {
  try {
    const children = (await Deno.readTextFile(`/proc/${taskPid}/task/${taskPid}/children`))
      .trim().split(/\s+/).filter(Boolean);
    const pid = children.length > 0 ? children[0] : String(taskPid);
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
    return kb === undefined ? null : +(Number(kb) / 1024).toFixed(1);
  } catch {
    return null;
  }
}

const SERVICE_READY = /listening on http:\/\/[^:\s]+:(\d+)/;

/** The settings of a service under the bench: `dataDir`, any free port, no rate limit to speak of. */
function serviceEnv(dataDir: string): Record<string, string> {
  // Settings from the caller's environment must not leak in (an APP_KV_PATH would point the
  // service at another database than the one seeded): an empty value counts as unset.
  const inherited = Object.keys(Deno.env.toObject()).filter((name) => name.startsWith("APP_"));
  return {
    ...Object.fromEntries(inherited.map((name) => [name, ""])),
    APP_DATA_DIR: dataDir,
    APP_PORT: "0",
    APP_HOST: "127.0.0.1",
    APP_CLIENT_RATE_LIMIT_PER_MINUTE: "1000000000",
    APP_CLIENT_RATE_LIMIT_BURST: "1000000000",
  };
}

/**
 * bench/layer_server.ts: the service's app with the part of `layer` replaced
 * by a no-op ("none": all parts real), on the settings `startService` uses.
 */
export function startLayerServer(
  dataDir: string,
  layer: string,
  cleanup: Cleanup,
): Promise<Server> {
  return spawnServer(
    `the layer server (${layer})`,
    Deno.execPath(),
    ["run", "-A", join(PROJECT_ROOT, "bench", "layer_server.ts"), layer],
    { env: serviceEnv(dataDir), ready: SERVICE_READY, cleanup },
  );
}

/** bench/baseline_server.ts: a bare `Deno.serve` answering `bodyFile` with the headers of `headersFile`. */
export function startBaseline(
  bodyFile: string,
  headersFile: string,
  cleanup: Cleanup,
): Promise<Server> {
  return spawnServer(
    "the baseline server",
    Deno.execPath(),
    [
      "run",
      "--allow-net=127.0.0.1",
      `--allow-read=${bodyFile},${headersFile}`,
      join(PROJECT_ROOT, "bench", "baseline_server.ts"),
      bodyFile,
      headersFile,
    ],
    { ready: /baseline listening on port (\d+)/, cleanup },
  );
}

/** A free TCP port on 127.0.0.1 (for programs that cannot pick one themselves). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * The nginx configuration of the download baseline: files of `root`, or the
 * directives of `server` (a proxy with an x-accel location, say) inside the server block.
 */
export function nginxConfig(
  { workDir, root, port, asRoot, server }: {
    workDir: string;
    root: string;
    port: number;
    asRoot: boolean;
    server?: string;
  },
): string {
  return [
    // Started as root, nginx would run its worker as `nobody`, which may not read our files.
    asRoot ? "user root;" : "",
    "daemon off;",
    "worker_processes 1;",
    `pid ${join(workDir, "nginx.pid")};`,
    `error_log ${join(workDir, "error.log")} warn;`,
    "events { worker_connections 1024; }",
    "http {",
    "  access_log off;",
    "  sendfile on;",
    "  tcp_nopush on;",
    "  default_type application/octet-stream;",
    ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((kind) =>
      `  ${kind}_temp_path ${join(workDir, `${kind}_temp`)};`
    ),
    server === undefined
      ? `  server { listen 127.0.0.1:${port}; root ${root}; }`
      : `  server {\n    listen 127.0.0.1:${port};\n${server}\n  }`,
    "}",
    "",
  ].filter((line) => line !== "").join("\n");
}

/**
 * The nginx directives of docs/operators.md for x-accel, pointed at one app and
 * one data dir; `secret` is the app's APP_X_ACCEL_SECRET.
 */
export function xAccelServer(appPort: number, artifactsDir: string, secret: string): string {
  return `
    large_client_header_buffers 4 64k;
    location / {
      proxy_pass http://127.0.0.1:${appPort};
      proxy_set_header X-Accel-Secret "${secret}";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
    location /_uds_artifacts/ {
      internal;
      alias ${artifactsDir}/;
      max_ranges 2000;
      etag off;
      add_header ETag $upstream_http_etag;
      add_header Last-Modified "";
      add_header X-Content-Type-Options $upstream_http_x_content_type_options;
      add_header X-Frame-Options $upstream_http_x_frame_options;
      add_header Referrer-Policy $upstream_http_referrer_policy;
      add_header Cross-Origin-Resource-Policy $upstream_http_cross_origin_resource_policy;
      add_header Strict-Transport-Security $upstream_http_strict_transport_security;
      add_header X-Robots-Tag $upstream_http_x_robots_tag;
      add_header Content-Security-Policy $upstream_http_content_security_policy;
      add_header Pragma $upstream_http_pragma;
      add_header Vary $upstream_http_vary;
      add_header Uds-Signature-Date $upstream_http_uds_signature_date;
      add_header Uds-Signature-Expires $upstream_http_uds_signature_expires;
      add_header Uds-Content-Sha256 $upstream_http_uds_content_sha256;
      add_header Uds-Signature $upstream_http_uds_signature;
      add_header X-Patch-SHA256 $upstream_http_x_patch_sha256;
      add_header X-Patch-Base-SHA256 $upstream_http_x_patch_base_sha256;
    }`;
}

/** nginx serving the files of `root` with sendfile (or `server`), as a child process (no daemon). */
export async function startNginx(
  nginx: string,
  root: string,
  workDir: string,
  cleanup: Cleanup,
  serverBlock?: string,
): Promise<Server> {
  await Deno.mkdir(workDir, { recursive: true });
  const port = freePort();
  const conf = join(workDir, "nginx.conf");
  await Deno.writeTextFile(
    conf,
    nginxConfig({ workDir, root, port, asRoot: Deno.uid() === 0, server: serverBlock }),
  );
  const server = await spawnServer(
    "nginx",
    nginx,
    ["-p", `${workDir}/`, "-e", join(workDir, "error.log"), "-c", conf],
    { port, cleanup },
  );
  // nginx prints nothing when it is up: poll the port until it answers.
  const deadline = Date.now() + 10_000;
  let exited = false;
  server.status.then(() => exited = true);
  while (true) {
    try {
      const res = await fetch(`${server.baseUrl}/`, { method: "HEAD" });
      await res.body?.cancel();
      return server;
    } catch (error) {
      if (exited || Date.now() > deadline) {
        const log = await Deno.readTextFile(join(workDir, "error.log")).catch(() => "");
        await server.stop();
        throw new Error(`nginx did not start: ${error}\n${server.output()}\n${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Pids of every descendant of `pid`, from /proc/<pid>/task/<tid>/children. */
export async function descendants(pid: number): Promise<number[]> {
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const current = queue.shift()!;
    let tids: string[] = [];
    try {
      for await (const entry of Deno.readDir(`/proc/${current}/task`)) tids.push(entry.name);
    } catch {
      tids = [];
    }
    for (const tid of tids) {
      const text = await Deno.readTextFile(`/proc/${current}/task/${tid}/children`).catch(() => "");
      for (const child of text.split(/\s+/).filter(Boolean).map(Number)) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/**
 * The pid of the process that runs main.ts under `deno task start` (the task
 * runner itself is a separate deno process): the task pid when it runs
 * main.ts itself, else the descendant whose command line names main.ts.
 */
export async function findServicePid(taskPid: number): Promise<number> {
  for (const pid of [taskPid, ...await descendants(taskPid)]) {
    const cmdline = await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => "");
    const args = cmdline.split("\0");
    if (args.includes("main.ts") && args.includes("run")) return pid;
  }
  throw new Error(`no process running main.ts under pid ${taskPid}`);
}

/** A memory figure of /proc/<pid>/status in KiB: VmHWM is the peak resident set. */
export async function procStatusKiB(pid: number, field: "VmHWM" | "VmRSS"): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]);
}

/** CPU time (user + system) a process has used so far, in seconds, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: 100 on every Linux this runs on (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * The CPU time each thread of `pid` has used so far, in nanoseconds, by thread
 * id (/proc/<pid>/task/<tid>/schedstat: finer than the 10 ms ticks of
 * {@link cpuSeconds}, for short runs).
 */
export async function threadCpuNs(pid: number): Promise<Map<string, number>> {
  const times = new Map<string, number>();
  for await (const entry of Deno.readDir(`/proc/${pid}/task`)) {
    const text = await Deno.readTextFile(`/proc/${pid}/task/${entry.name}/schedstat`)
      .catch(() => null);
    if (text !== null) times.set(entry.name, Number(text.split(" ")[0]));
  }
  return times;
}

/**
 * Milliseconds of CPU the threads of `pid` used since `before` (from
 * {@link threadCpuNs}); a thread that ended in between is left out.
 */
export async function cpuMsSince(pid: number, before: Map<string, number>): Promise<number> {
  let ns = 0;
  for (const [tid, now] of await threadCpuNs(pid)) ns += now - (before.get(tid) ?? 0);
  return ns / 1e6;
}
