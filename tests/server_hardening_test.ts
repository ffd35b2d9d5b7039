/**
 * End to end, the real `deno task start`: issue 9 item 1 (a connection flood
 * under a low descriptor limit) and item 8 (start-up with any data dir, and
 * one-line start-up failures).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PROJECT_ROOT, startServer } from "./server_process.ts";
import { sleep } from "./helpers.ts";

const BASE_ENV = {
  NO_COLOR: "1",
  APP_PORT: "0",
  APP_HOST: "127.0.0.1",
  APP_ADMIN_PASSWORD: "test-password-123",
};

/** Runs `deno task start` after `prelude` (ulimit, umask) in bash. */
function shell(prelude: string): string[] {
  return ["bash", "-c", `${prelude} exec "$0" "$@"`];
}

/** A connection that sent half a request header and then nothing. */
async function halfOpen(port: number): Promise<Deno.TcpConn | null> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "));
    return conn;
  } catch {
    return null;
  }
}

async function healthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
      signal: AbortSignal.timeout(1000),
    });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

Deno.test({
  name: "issue 9.1: a connection flood under ulimit -n 256 does not end the process",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "uds-flood-" });
  const server = await startServer(dataDir, {}, { via: shell("ulimit -n 256;") });
  const conns: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < 300; i++) {
      const conn = await halfOpen(server.port);
      if (conn !== null) conns.push(conn);
    }
    await sleep(1500);
    const warnings = () =>
      server.lines().filter((line) => /stopped accepting connections/.test(line));
    assert.equal(warnings().length, 1, server.lines().join("\n"));
    assert.match(warnings()[0], /"level":"warn".*Too many open files/);

    for (const conn of conns.splice(0)) conn.close();
    let back = false;
    for (let i = 0; i < 50 && !back; i++) {
      back = await healthy(server.port);
      if (!back) await sleep(200);
    }
    assert.ok(back, "serves again once descriptors are free");
    // One warning for the incident, however many connections and restarts it took.
    await sleep(5500);
    assert.equal(warnings().length, 1);
    assert.ok(server.lines().some((line) => /serving normally again/.test(line)));
    assert.equal((await server.stop()).code, 0);
  } finally {
    for (const conn of conns) conn.close();
    server.kill("SIGKILL");
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test({
  name: "issue 9.8: deno task start works with any data dir and warns when others can read it",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const root = await Deno.makeTempDir({ prefix: "uds-anydir-" });
  const dataDir = join(root, "srv", "uds");
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o755 });
  await Deno.chmod(dataDir, 0o755);
  const server = await startServer(dataDir, {}, { via: shell("umask 022;") });
  try {
    assert.ok(await healthy(server.port));
    const warning = server.lines().find((line) => /can be read by other users/.test(line));
    assert.match(warning ?? "", /"level":"warn".*mode 755.*chmod 700/);
    assert.equal(((await Deno.stat(join(dataDir, "kv.sqlite3"))).mode! & 0o777).toString(8), "600");
    assert.equal(((await Deno.stat(join(dataDir, "artifacts"))).mode! & 0o777).toString(8), "700");
    assert.equal((await server.stop()).code, 0);
  } finally {
    server.kill("SIGKILL");
    await server.stop();
    await Deno.remove(root, { recursive: true });
  }
});

/** `deno task start` that is expected to fail: its exit code and stderr. */
async function failedStart(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "start"],
    cwd: PROJECT_ROOT,
    env: { ...BASE_ENV, ...env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    signal: AbortSignal.timeout(20_000),
  }).output();
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}

Deno.test("issue 9.8: start-up failures are one line naming the setting, exit 1, no stack trace", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "uds-fail-" });
  try {
    const assertOneLine = (result: { code: number; stderr: string }, pattern: RegExp) => {
      assert.equal(result.code, 1, result.stderr);
      const lines = result.stderr.trim().split("\n");
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0], pattern);
      assert.doesNotMatch(result.stderr, /Uncaught|\n\s+at /);
    };

    await t.step("a busy port", async () => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      try {
        const result = await failedStart({
          APP_DATA_DIR: join(root, "busy"),
          APP_PORT: String(listener.addr.port),
        });
        assertOneLine(result, /^cannot start: APP_PORT: 127\.0\.0\.1:\d+ is already in use; /);
      } finally {
        listener.close();
      }
    });

    await t.step("a data dir that cannot be a directory", async () => {
      const file = join(root, "file");
      await Deno.writeTextFile(file, "x");
      const result = await failedStart({ APP_DATA_DIR: join(file, "data") });
      assertOneLine(result, /^cannot start: APP_DATA_DIR: .* is not a directory/);
    });

    await t.step("a data dir the permission flags cannot name", async () => {
      const result = await failedStart({ APP_DATA_DIR: join(root, "a,b") });
      assertOneLine(
        result,
        /^cannot start: invalid setting APP_DATA_DIR: must not contain a comma/,
      );
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
