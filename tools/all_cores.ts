/**
 * `deno task start:all-cores`: runs `APP_WORKERS` instances of the service
 * (default: one per CPU core), each `deno task start` with main.ts as it is,
 * on one port with SO_REUSEPORT (`APP_REUSE_PORT=true`), so that the kernel
 * spreads connections over them. They share the data dir and the KV like
 * instances on several hosts do (docs/operators.md, "Several instances").
 *
 * With `APP_METRICS_ADDRESS=host:port`, worker i serves its metrics on
 * port + i. SIGTERM is passed to every worker (each drains its own
 * requests). SIGINT is not: Ctrl-C in a terminal reaches every process of
 * the group already, and a second signal would cut the workers' drain short.
 * When one worker exits unexpectedly the others are stopped too and the exit
 * code is passed on, so the supervisor restarts the group.
 */
const MAX_WORKERS = 256;

function fail(message: string): never {
  console.error(`cannot start: ${message}`);
  Deno.exit(1);
}

function readWorkers(): number {
  const raw = Deno.env.get("APP_WORKERS")?.trim() || String(navigator.hardwareConcurrency);
  const workers = Number(raw);
  if (!/^\d+$/.test(raw) || workers < 1 || workers > MAX_WORKERS) {
    fail(`invalid setting APP_WORKERS: expected a number from 1 to ${MAX_WORKERS}, got "${raw}"`);
  }
  return workers;
}

/** The environment of worker `index`: shared port, its own metrics port. */
function workerEnv(index: number): Record<string, string> {
  const env: Record<string, string> = { APP_REUSE_PORT: "true" };
  const metrics = Deno.env.get("APP_METRICS_ADDRESS")?.trim();
  const match = metrics ? /^(.*):(\d+)$/.exec(metrics) : null;
  if (match && Number(match[2]) !== 0) {
    env.APP_METRICS_ADDRESS = `${match[1]}:${Number(match[2]) + index}`;
  }
  return env;
}

const workers = readWorkers();
if (workers > 1 && Deno.env.get("APP_PORT")?.trim() === "0") {
  fail("invalid setting APP_PORT: several workers share one port, 0 would give each its own");
}
if (workers > 1 && (Deno.env.get("APP_RATE_LIMIT_STORE")?.trim() || "memory") === "memory") {
  console.error(
    `note: APP_RATE_LIMIT_STORE=memory gives each of the ${workers} workers its own buckets; ` +
      "set it to kv for one limit per client",
  );
}

const children = Array.from({ length: workers }, (_, index) =>
  new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "start"],
    cwd: new URL("..", import.meta.url),
    env: workerEnv(index),
    stdin: "null",
  }).spawn());

let stopping = false;
function stopAll(): void {
  stopping = true;
  for (const child of children) {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
  }
}
Deno.addSignalListener("SIGTERM", stopAll);
Deno.addSignalListener("SIGINT", () => stopping = true);

let exitCode = 0;
await Promise.all(children.map(async (child, index) => {
  const status = await child.status;
  if (status.code !== 0) exitCode ||= status.code;
  if (!stopping) {
    console.error(`worker ${index} exited with code ${status.code}: stopping the others`);
    exitCode ||= 1;
    stopAll();
  }
}));
Deno.exit(exitCode);
