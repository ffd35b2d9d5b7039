import assert from "node:assert/strict";
import { createApp } from "../app.ts";
import type { Config, LogFormat } from "../src/lib/config.ts";
import {
  type AccessEntry,
  type AccessLogRecord,
  accessLogRecord,
  createBufferedWriter,
  createJsonAccessLine,
  createLogger,
  formatAccessLine,
  formatEventLine,
} from "../src/lib/log.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";

const REMOTE = { remoteAddr: { transport: "tcp", hostname: "192.0.2.7", port: 40000 } };

/** The test app's storage behind a second app that logs into `lines`. */
function loggingApp(t: TestApp, format: LogFormat, overrides: Partial<Config> = {}) {
  const lines: string[] = [];
  const app = createApp({
    config: { ...t.config, ...overrides },
    store: t.store,
    artifacts: t.artifacts,
    rateLimitKv: t.rateLimitKv,
    recordKeyUse: () => {},
    logger: createLogger(format, (line) => lines.push(line)),
  });
  const request = (path: string, headers: Record<string, string> = {}, method = "GET") =>
    app.fetch(new Request(`http://localhost${path}`, { method, headers }), REMOTE);
  return { lines, request, app };
}

Deno.test("access log", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  // Several read chunks (src/client_api/download.ts reads 256 KiB at a time), so a download can be cut.
  const bytes = new Uint8Array(1_000_000).fill(1);
  const release = await seedRelease(app, project.id, "1.0.0", bytes);
  const { apiKey, secret } = await seedKey(app);
  const auth = { authorization: `Bearer ${secret}` };

  await t.step("one JSON line per request with the documented fields", async () => {
    const { lines, request } = loggingApp(app, "json");
    const res = await request("/api/v1/projects/desktop/releases/latest?x=1", {
      ...auth,
      "user-agent": "MyApp/2.3",
    });
    const body = await res.arrayBuffer();
    assert.equal(lines.length, 1);
    const entry = JSON.parse(lines[0]) as AccessLogRecord;
    assert.deepEqual(Object.keys(entry).sort(), [
      "bytes",
      "client",
      "duration_ms",
      "key_id",
      "method",
      "path",
      "status",
      "time",
      "user_agent",
    ]);
    assert.equal(entry.method, "GET");
    assert.equal(entry.path, "/api/v1/projects/desktop/releases/latest", "no query string");
    assert.equal(entry.status, 200);
    assert.equal(entry.bytes, body.byteLength);
    assert.equal(entry.client, "192.0.2.7");
    assert.equal(entry.key_id, apiKey.id);
    assert.equal(entry.user_agent, "MyApp/2.3");
    assert.ok(entry.duration_ms >= 0 && entry.duration_ms < 10_000);
    assert.ok(Math.abs(Date.parse(entry.time) - Date.now()) < 60_000);
  });

  await t.step(
    "the peer's address is read once a request: rate limit, adoption and log share it",
    async () => {
      const { lines, app: logging } = loggingApp(app, "json");
      let reads = 0;
      const env = {
        get remoteAddr() {
          reads++;
          return REMOTE.remoteAddr;
        },
      };
      const res = await logging.fetch(
        new Request("http://localhost/api/v1/projects/desktop/releases/latest", { headers: auth }),
        env,
      );
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      assert.equal(lines.length, 1);
      assert.equal((JSON.parse(lines[0]) as AccessLogRecord).client, "192.0.2.7");
      assert.equal(reads, 1);
    },
  );

  await t.step("a download is logged once its body is sent, with its release id", async () => {
    const { lines, request } = loggingApp(app, "json");
    const res = await request(`/api/v1/releases/${release.id}/download`, auth);
    assert.equal(lines.length, 0, "not logged before the body is sent");
    assert.equal((await res.arrayBuffer()).byteLength, bytes.byteLength);
    assert.equal(lines.length, 1);
    const entry = JSON.parse(lines[0]);
    assert.equal(entry.release_id, release.id);
    assert.equal(entry.key_id, apiKey.id);
    assert.equal(entry.bytes, bytes.byteLength);
    assert.equal(entry.aborted, undefined);
  });

  await t.step("a download cut short is logged as aborted with the bytes sent", async () => {
    const { lines, request } = loggingApp(app, "json");
    const res = await request(`/api/v1/releases/${release.id}/download`, auth);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    const entry = JSON.parse(lines[0]);
    assert.equal(entry.aborted, true);
    assert.ok(entry.bytes > 0 && entry.bytes < bytes.byteLength);
  });

  await t.step("errors and failed key checks are logged; the key itself never", async () => {
    const { lines, request } = loggingApp(app, "json");
    await (await request("/api/v1/projects")).arrayBuffer();
    await (await request(`/api/v1/projects?api_key=${secret}`, {
      authorization: `Bearer ${secret}x`,
      cookie: "session=s3cr3t-session-id",
    })).arrayBuffer();
    await (await request("/api/v1/releases/abc", auth)).arrayBuffer();
    const entries = lines.map((line) => JSON.parse(line));
    assert.deepEqual(entries.map((e) => e.status), [401, 401, 400]);
    assert.equal(entries[0].bytes, JSON.stringify({ error: "missing bearer api key" }).length);
    for (const line of lines) {
      assert.ok(!line.includes(secret.slice(4)), "no part of the key");
      assert.ok(!line.includes("s3cr3t"), "no cookie");
    }
  });

  await t.step("client address from X-Forwarded-For only with APP_TRUST_PROXY", async () => {
    const forwarded = { "x-forwarded-for": "203.0.113.9, 198.51.100.4" };
    const direct = loggingApp(app, "json");
    await (await direct.request("/api/v1", forwarded)).arrayBuffer();
    assert.equal(JSON.parse(direct.lines[0]).client, "192.0.2.7");
    const proxied = loggingApp(app, "json", { trustProxy: true });
    await (await proxied.request("/api/v1", forwarded)).arrayBuffer();
    assert.equal(JSON.parse(proxied.lines[0]).client, "198.51.100.4");
  });

  await t.step("HEAD logs no body bytes", async () => {
    const { lines, request } = loggingApp(app, "json");
    const res = await request(`/api/v1/releases/${release.id}/download`, auth, "HEAD");
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(lines[0]).bytes, 0);
  });

  await t.step("responses without a length (HTML, text) are counted as sent", async () => {
    const { Hono } = await import("hono");
    const { createObserver } = await import("../src/http/observe.ts");
    const { withDefaultParts } = await import("../src/http/app_parts.ts");
    const lines: string[] = [];
    const page = new Hono();
    page.use(
      createObserver(withDefaultParts({
        config: app.config,
        store: app.store,
        artifacts: app.artifacts,
        recordKeyUse: () => {},
        logger: createLogger("json", (line) => lines.push(line)),
      })).middleware,
    );
    page.get("/page", (c) => c.html("<p>héllo</p>"));
    page.get("/gone", (c) => c.redirect("/page", 303));
    assert.equal(await (await page.request("/page")).text(), "<p>héllo</p>");
    await (await page.request("/gone")).arrayBuffer();
    assert.deepEqual(lines.map((line) => JSON.parse(line).bytes), [13, 0]);
  });

  await t.step("text format for a terminal", async () => {
    const { lines, request } = loggingApp(app, "text");
    const res = await request(`/api/v1/releases/${release.id}/download`, {
      ...auth,
      "user-agent": 'odd "agent"',
    });
    await res.arrayBuffer();
    assert.match(
      lines[0],
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z 192\\.0\\.2\\.7 GET /api/v1/releases/${release.id}/download 200 ${bytes.byteLength}B [\\d.]+ms key=${apiKey.id} release=${release.id} "odd \\\\"agent\\\\""$`,
      ),
    );
    assert.ok(!lines[0].includes(secret));
  });
});

Deno.test("every route, and every path no route knows, is observed exactly once", async () => {
  await using t = await createTestApp({ metricsToken: "metrics-token" });
  const project = await seedProject(t, { slug: "alpha" });
  const release = await seedRelease(t, project.id, "1.0.0", new Uint8Array(10));
  const { lines, request, app } = loggingApp(t, "json");
  // Unknown paths, and methods no route of a known path takes (its middleware, then not-found).
  const extra = ["GET /nope", "GET /admin/nope", "GET /api/v1/nope", "GET /api/v1/", "GET /admin/"]
    .concat(["POST /healthz", "DELETE /", "PUT /metrics", "PATCH /admin/nope"]);
  const sent: string[] = [];
  for (const { method, path: pattern } of app.routes) {
    if (method === "ALL") continue;
    const path = pattern.replace(
      /:(\w+)/g,
      (_, name: string) =>
        name === "slug" ? "alpha" : name === "name" ? "style.css" : String(release.id),
    );
    sent.push(`${method} ${path}`);
  }
  sent.push(...extra);
  assert.ok(sent.length > 30, `${sent.length} requests`);
  for (const line of sent) {
    const [method, path] = line.split(" ");
    lines.length = 0;
    const res = await request(path, {}, method);
    await res.body?.cancel();
    assert.equal(lines.length, 1, `${line}: ${lines.length} access lines`);
    assert.equal(JSON.parse(lines[0]).status, res.status, line);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff", line);
  }
});

Deno.test("no middleware or catch-all reaches a client API route: Hono calls its handler directly", async () => {
  await using t = await createTestApp();
  const shared = t.app.routes.filter((route) =>
    route.method === "ALL" &&
    (route.path === "*" || route.path === "/*" || route.path.startsWith("/api"))
  );
  assert.deepEqual(shared.map((route) => route.path), []);
  const api = t.app.routes.filter((route) => route.path.startsWith("/api/v1"));
  assert.ok(api.length >= 5, `${api.length} client API routes`);
});

Deno.test("log formatting", async (t) => {
  const record: AccessLogRecord = {
    time: "2025-01-02T03:04:05.678Z",
    method: "GET",
    path: "/api/v1/projects",
    status: 200,
    duration_ms: 1.5,
    bytes: 42,
    client: "127.0.0.1",
  };

  await t.step("json access line is the record", () => {
    assert.deepEqual(JSON.parse(formatAccessLine(record, "json")), record);
  });

  await t.step("the JSON line made without an object is the record's JSON", () => {
    const entry: AccessEntry = {
      startedMs: Date.parse("2025-01-02T03:04:05.678Z"),
      method: "GET",
      url: "http://h:1/api/v1/x%22y/%F0%9F%98%80?token=secret",
      status: 200,
      durationMs: 1.23456,
      bytes: 42,
      client: 'odd"client\\',
      keyId: undefined,
      releaseId: undefined,
      userAgent: undefined,
      aborted: false,
    };
    const jsonAccessLine = createJsonAccessLine();
    for (
      const variant of [
        entry,
        { ...entry, keyId: 7, releaseId: 9, userAgent: 'ua "quoted" \u0001 é', aborted: true },
        { ...entry, userAgent: "x".repeat(300), status: 404, durationMs: 0.0004 },
        { ...entry, method: "PROPFIND", url: "http://h:1", userAgent: "" },
        { ...entry, url: `http://h:1/${"%22".repeat(400)}?q`, client: "x".repeat(600) },
      ]
    ) {
      // Twice: the second line is made from the remembered JSON of path, client and User-Agent.
      assert.equal(jsonAccessLine(variant), JSON.stringify(accessLogRecord(variant)));
      assert.equal(jsonAccessLine(variant), JSON.stringify(accessLogRecord(variant)));
    }
    assert.ok(!jsonAccessLine(entry).includes("secret"), "no query string");
  });

  await t.step("text access line", () => {
    assert.equal(
      formatAccessLine({ ...record, aborted: true }, "text"),
      "2025-01-02T03:04:05.678Z 127.0.0.1 GET /api/v1/projects 200 42B 1.5ms aborted",
    );
  });

  await t.step("events", () => {
    const time = "2025-01-02T03:04:05.678Z";
    assert.deepEqual(
      JSON.parse(formatEventLine(
        { time, level: "warn", message: "stopping", fields: { in_flight: 2 } },
        "json",
      )),
      { time, level: "warn", msg: "stopping", in_flight: 2 },
    );
    assert.equal(
      formatEventLine({
        time,
        level: "info",
        message: "stopped",
        fields: { signal: "SIGTERM", gone: undefined },
      }, "text"),
      `${time} INFO stopped signal="SIGTERM"`,
    );
  });
});

Deno.test("buffered writer batches lines per tick and flushes on demand", async () => {
  const writes: string[] = [];
  const decoder = new TextDecoder();
  // A sink that takes at most 5 bytes per call, like a busy pipe.
  const out = {
    writeSync(bytes: Uint8Array) {
      const n = Math.min(5, bytes.byteLength);
      writes.push(decoder.decode(bytes.subarray(0, n)));
      return n;
    },
  };
  const writer = createBufferedWriter(out);
  writer.write("first");
  writer.write("second");
  assert.equal(writes.length, 0, "nothing written synchronously");
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(writes.length, 0, "lines wait a little for others");
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(writes.join(""), "first\nsecond\n", "then go out in one batch");

  writes.length = 0;
  writer.write("third");
  writer.flush();
  assert.equal(writes.join(""), "third\n");

  writes.length = 0;
  const small = createBufferedWriter(out, 10);
  small.write("0123456789ab");
  assert.equal(writes.join(""), "0123456789ab\n", "a full buffer is written at once");

  writes.length = 0;
  const bytes: number[] = [];
  const tight = createBufferedWriter({
    writeSync(chunk: Uint8Array) {
      bytes.push(...chunk);
      return chunk.byteLength;
    },
  }, 16);
  for (const line of ["ééé", "😀😀", "a", "\u0001é😀x"]) tight.write(line);
  tight.flush();
  assert.equal(
    new TextDecoder().decode(new Uint8Array(bytes)),
    "ééé\n😀😀\na\n\u0001é😀x\n",
    "multi-byte lines across a small buffer: whole, in order",
  );

  const broken = createBufferedWriter({
    writeSync() {
      throw new Deno.errors.BrokenPipe("closed");
    },
  });
  broken.write("lost");
  broken.flush(); // must not throw
});
