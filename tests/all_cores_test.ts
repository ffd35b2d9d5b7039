/**
 * `deno task start:all-cores`: N workers of the unchanged main.ts on one port
 * (SO_REUSEPORT), each with its own metrics port; SIGTERM stops them all.
 */
import assert from "node:assert/strict";
import { makeDataTempDir, startServer } from "./server_process.ts";

/**
 * A port with nothing listening on it, nor on the next one; neither of the two
 * is one of `taken` (ports chosen before, which are free until the server starts).
 */
function freePortPair(taken: number[] = []): number {
  for (;;) {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    if (taken.includes(port) || taken.includes(port + 1)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port: port + 1 }).close();
      return port;
    } catch {
      // the next port is taken: try another
    }
  }
}

/** The sum of `http_requests_total` for `/healthz` on one metrics listener. */
async function healthzCount(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return [...text.matchAll(/^http_requests_total\{[^}]*route="\/healthz"[^}]*\} (\d+)$/gm)]
    .reduce((sum, match) => sum + Number(match[1]), 0);
}

Deno.test("start:all-cores: two workers share the port; SIGTERM stops both", async () => {
  const dataDir = await makeDataTempDir("all-cores");
  const port = freePortPair();
  const metricsPort = freePortPair([port]);
  const run = await startServer(dataDir, {
    APP_WORKERS: "2",
    APP_PORT: String(port),
    APP_LOG_FORMAT: "text",
    APP_RATE_LIMIT_STORE: "kv",
    APP_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
  }, { task: "start:all-cores", listeners: 2 });
  try {
    const requests = 40;
    for (let i = 0; i < requests; i++) {
      // A new client, so a new connection each time: the kernel picks a worker per connection.
      using client = Deno.createHttpClient({});
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { client });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    const counts = [await healthzCount(metricsPort), await healthzCount(metricsPort + 1)];
    assert.equal(counts[0] + counts[1], requests, `per worker: ${counts}`);
    assert.ok(counts[0] > 0 && counts[1] > 0, `both workers served: ${counts}`);

    const status = await run.stop();
    assert.equal(status.code, 0, run.output());
    assert.equal((run.output().match(/INFO stopped/g) ?? []).length, 2, run.output());
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), "nothing listens any more");
  } finally {
    // SIGTERM, which `deno task` passes on; SIGKILL would kill only the task and orphan the
    // workers, whose open output would then keep stop() waiting.
    await run.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("start:all-cores: several workers need a fixed APP_PORT", async () => {
  const dataDir = await makeDataTempDir("all-cores");
  await assert.rejects(
    startServer(dataDir, { APP_WORKERS: "2", APP_PORT: "0" }, { task: "start:all-cores" }),
    /exited with code 1 before listening:[^]*cannot start: invalid setting APP_PORT/,
  );
  await Deno.remove(dataDir, { recursive: true });
});
