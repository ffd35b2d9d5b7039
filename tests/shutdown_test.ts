/**
 * End to end: the real server (`deno task start`) stops gracefully on SIGTERM.
 * A download in flight when the signal arrives finishes with every byte, new
 * connections are refused, the process exits 0; with a short timeout, a
 * stalled download is cut at the timeout and the process still exits 0.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { createFsStore, publishRelease } from "../src/storage/mod.ts";
import { createApiKey, createProject } from "../src/store/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const SIZE = 24 * 1024 * 1024;

interface Seeded {
  dataDir: string;
  secret: string;
  releaseId: number;
  checksum: string;
}

/** A data dir under ./data (the only place the start task may write) with one large release. */
async function seed(): Promise<Seeded> {
  const dataDir = `./data/test-shutdown-${crypto.randomUUID()}`;
  const absolute = join(ROOT, dataDir);
  await Deno.mkdir(absolute, { recursive: true });
  const kv = await Deno.openKv(join(absolute, "kv.sqlite3"));
  try {
    const block = crypto.getRandomValues(new Uint8Array(64 * 1024));
    const chunks = Array.from({ length: SIZE / block.byteLength }, () => block);
    const project = await createProject(kv, { name: "Desktop", slug: "desktop" });
    const release = await publishRelease(
      kv,
      createFsStore(join(absolute, "artifacts")),
      { project_id: project.id, version: "1.0.0", filename: "app.bin" },
      ReadableStream.from(chunks),
      SIZE,
    );
    const { secret } = await createApiKey(kv, {
      name: "shutdown test",
      can_download: true,
      scope_mode: "all_projects",
    });
    return { dataDir, secret, releaseId: release.id, checksum: release.checksum_sha256 };
  } finally {
    kv.close();
  }
}

interface Server {
  process: Deno.ChildProcess;
  port: number;
  lines: string[];
  /** Settles with the exit code; `undefined` while running. */
  exitCode: () => number | undefined;
  exited: Promise<number>;
}

async function startServer(dataDir: string, env: Record<string, string> = {}): Promise<Server> {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["task", "start"],
    cwd: ROOT,
    env: { APP_PORT: "0", APP_HOST: "127.0.0.1", APP_DATA_DIR: dataDir, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let code: number | undefined;
  const exited = process.status.then((status) => code = status.code);
  const lines: string[] = [];
  const listening = Promise.withResolvers<number>();
  (async () => {
    let rest = "";
    for await (const text of process.stdout.pipeThrough(new TextDecoderStream())) {
      const parts = (rest + text).split("\n");
      rest = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(line)?.[1];
        if (port) listening.resolve(Number(port));
      }
    }
  })();
  const stderr = new Response(process.stderr).text();
  const port = await Promise.race([
    listening.promise,
    exited.then(async () => {
      throw new Error(`server exited early: ${await stderr}`);
    }),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error("server did not start")), 20_000)
    ),
  ]);
  return { process, port, lines, exitCode: () => code, exited };
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function startDownload(server: Server, seeded: Seeded) {
  const res = await fetch(
    `http://127.0.0.1:${server.port}/api/v1/releases/${seeded.releaseId}/download`,
    { headers: { authorization: `Bearer ${seeded.secret}` } },
  );
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  assert.ok(!first.done);
  return { reader, first: first.value };
}

Deno.test({
  name: "graceful shutdown of the real server",
  // The server runs as a child process; its stdout reader ends when it exits.
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const seeded = await seed();
  let server: Server | undefined;
  try {
    await t.step("SIGTERM lets a download in flight finish, then exits 0", async () => {
      server = await startServer(seeded.dataDir);
      const { reader, first } = await startDownload(server, seeded);
      server.process.kill("SIGTERM");
      await sleep(700);
      assert.equal(server.exitCode(), undefined, "still running while the download is unfinished");

      await assert.rejects(
        fetch(`http://127.0.0.1:${server.port}/healthz`).then((res) => res.body?.cancel()),
        "no new connections once stopping",
      );

      const hash = createHash("sha256").update(first);
      let received = first.byteLength;
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        hash.update(chunk.value);
        received += chunk.value.byteLength;
        if (received < SIZE / 2) await sleep(1); // a slow client
      }
      assert.equal(received, SIZE);
      assert.equal(hash.digest("hex"), seeded.checksum);

      assert.equal(await server.exited, 0);
      const events = server.lines.map((line) => JSON.parse(line));
      assert.ok(events.some((e) => e.level === "info" && /^stopping/.test(e.msg)));
      assert.equal(events.at(-1).msg, "stopped");
      const download = events.find((e) => e.path?.endsWith("/download"));
      assert.equal(download.bytes, SIZE);
      assert.equal(download.aborted, undefined);
    });

    await t.step("a stalled download is cut at APP_SHUTDOWN_TIMEOUT_SECONDS; exit 0", async () => {
      server = await startServer(seeded.dataDir, {
        APP_SHUTDOWN_TIMEOUT_SECONDS: "1",
        APP_LOG_FORMAT: "text",
      });
      const { reader } = await startDownload(server, seeded);
      const stopAt = performance.now();
      server.process.kill("SIGTERM");
      assert.equal(await server.exited, 0);
      const took = performance.now() - stopAt;
      assert.ok(took >= 900 && took < 8000, `stopped after ${took} ms`);
      assert.ok(server.lines.some((line) => / WARN shutdown timeout reached/.test(line)));
      await reader.cancel().catch(() => {});
    });
  } finally {
    if (server?.exitCode() === undefined) {
      server?.process.kill("SIGKILL");
      await server?.exited;
    }
    await Deno.remove(join(ROOT, seeded.dataDir), { recursive: true });
  }
});
