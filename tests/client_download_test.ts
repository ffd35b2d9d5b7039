/**
 * The reference client's download against a tiny in-test HTTP server that
 * supports Range/If-Range and can drop the connection half way.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import {
  checkForUpdate,
  downloadRelease,
  type Release,
  type RetryNotice,
  UpdateClientError,
} from "../client/update_client.ts";
import { EXPECTED_DROP } from "./expected_noise.ts";
import { exists } from "./helpers.ts";

const SIZE = 300_000;
const BYTES = Uint8Array.from({ length: SIZE }, (_, i) => (i * 7919 + (i >> 8)) & 0xff);
const SHA256 = createHash("sha256").update(BYTES).digest("hex");
const ETAG = `"${SHA256}"`;

interface Behaviour {
  /** Honour `Range` (with a matching or absent `If-Range`). */
  ranges: boolean;
  etag: string;
  /** Drop the connection after this many body bytes, for the next `drops` responses. */
  dropAfter: number;
  drops: number;
  /** Stop sending (without closing) after `dropAfter` bytes instead of dropping. */
  stall: boolean;
  /** Serve these bytes instead of the real ones. */
  body: Uint8Array;
  /** Canned error answers, served first, one per request. */
  failures: { status: number; headers?: Record<string, string> }[];
}

interface SeenRequest {
  range: string | null;
  ifRange: string | null;
  authorization: string | null;
}

function startRangeServer(overrides: Partial<Behaviour> = {}) {
  const behaviour: Behaviour = {
    ranges: true,
    etag: ETAG,
    dropAfter: 0,
    drops: 0,
    stall: false,
    body: BYTES,
    failures: [],
    ...overrides,
  };
  const seen: SeenRequest[] = [];
  const releaseStall = Promise.withResolvers<void>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    seen.push({
      range: req.headers.get("range"),
      ifRange: req.headers.get("if-range"),
      authorization: req.headers.get("authorization"),
    });
    const failure = behaviour.failures.shift();
    if (failure) {
      return Response.json({ error: `canned ${failure.status}` }, failure);
    }
    if (new URL(req.url).pathname === "/api/v1/projects/desktop/releases/latest") {
      return Response.json({ project: { slug: "desktop" }, release: releaseFor(SHA256) });
    }
    const body = behaviour.body;
    const range = /^bytes=(\d+)-$/.exec(req.headers.get("range") ?? "");
    const ifRange = req.headers.get("if-range");
    const partial = behaviour.ranges && range !== null &&
      (ifRange === null || ifRange === behaviour.etag);
    const start = partial ? Number(range[1]) : 0;
    if (start >= body.length && partial) {
      return new Response(null, {
        status: 416,
        headers: { "content-range": `bytes */${body.length}` },
      });
    }
    const headers: Record<string, string> = {
      "content-length": String(body.length - start),
      etag: behaviour.etag,
      "accept-ranges": behaviour.ranges ? "bytes" : "none",
    };
    if (partial) headers["content-range"] = `bytes ${start}-${body.length - 1}/${body.length}`;
    const cut = behaviour.drops > 0 ? behaviour.dropAfter : Infinity;
    if (behaviour.drops > 0) behaviour.drops--;
    return new Response(
      bodyStream(body.subarray(start), cut, behaviour.stall, releaseStall.promise),
      {
        status: partial ? 206 : 200,
        headers,
      },
    );
  });
  return {
    behaviour,
    seen,
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    close: async () => {
      releaseStall.resolve();
      await server.shutdown();
    },
  };
}

/** Streams `bytes` in 16 KiB chunks; after `cut` bytes it errors (drops) or stalls. */
function bodyStream(bytes: Uint8Array, cut: number, stall: boolean, unstall: Promise<void>) {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= cut) {
        if (stall) await unstall;
        controller.error(EXPECTED_DROP); // a plain string: see expected_noise.ts
        return;
      }
      const end = Math.min(bytes.length, sent + 16_384, cut);
      if (sent >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(sent, end));
      sent = end;
    },
  });
}

function releaseFor(checksum = SHA256, size = SIZE): Release {
  return {
    id: 7,
    version: "2.0.0",
    filename: "app.bin",
    checksum_sha256: checksum,
    size_bytes: size,
    content_type: "application/octet-stream",
    release_notes: "",
    created_at: new Date().toISOString(),
    metadata_url: "/api/v1/releases/7",
    download_url: "/api/v1/releases/7/download",
  };
}

/** Download options for the usual release from `server` into `target`. */
function downloadOptions(server: { baseUrl: string }, target: string) {
  return { baseUrl: server.baseUrl, apiKey: "k", release: releaseFor(), target };
}

/** The `.part.json` state of an earlier download of {@link releaseFor}() from the server. */
const PART_OF_RELEASE = { release_id: 7, checksum_sha256: SHA256, size_bytes: SIZE, etag: ETAG };

/** Leaves a partial download of `bytes` beside `file`, as an interrupted earlier call would. */
async function writePart(file: string, bytes: Uint8Array, state: Record<string, unknown>) {
  await Deno.writeFile(`${file}.part`, bytes);
  await Deno.writeTextFile(`${file}.part.json`, JSON.stringify(state));
}

const noSleep = { sleep: () => Promise.resolve() };

async function assertDownloaded(target: string) {
  const got = await Deno.readFile(target);
  assert.equal(got.length, SIZE);
  assert.equal(createHash("sha256").update(got).digest("hex"), SHA256);
  assert.equal(await exists(`${target}.part`), false);
  assert.equal(await exists(`${target}.part.json`), false);
}

async function rejectsWith(promise: Promise<unknown>, kind: string, status?: number) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof UpdateClientError, String(error));
    assert.equal(error.kind, kind, error.message);
    if (status !== undefined) assert.equal(error.status, status);
    return true;
  });
}

Deno.test("reference client downloads", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "uds-client-" });
  let n = 0;
  const target = () => join(dir, `app-${++n}.bin`);

  await t.step("a plain download verifies and moves the file into place", async () => {
    const server = startRangeServer();
    const file = target();
    const result = await downloadRelease({
      baseUrl: server.baseUrl,
      apiKey: "uds_secret",
      release: releaseFor(),
      target: file,
    });
    await server.close();
    await assertDownloaded(file);
    assert.deepEqual(result, { receivedBytes: SIZE, resumed: false });
    assert.equal(server.seen[0].authorization, "Bearer uds_secret");
    assert.equal(server.seen[0].range, null);
  });

  await t.step(
    "a dropped connection keeps the part; the next call resumes with Range",
    async () => {
      const server = startRangeServer({ dropAfter: 100_000, drops: 1 });
      const file = target();
      const options = downloadOptions(server, file);
      await rejectsWith(downloadRelease({ ...options, retries: 0 }), "network");
      assert.equal(await exists(file), false);
      const partSize = (await Deno.stat(`${file}.part`)).size;
      assert.ok(partSize > 0 && partSize <= 100_000, `part has ${partSize} bytes`);
      const state = JSON.parse(await Deno.readTextFile(`${file}.part.json`));
      assert.equal(state.etag, ETAG);

      const result = await downloadRelease({ ...options, retries: 0 });
      await server.close();
      await assertDownloaded(file);
      assert.deepEqual(result, { receivedBytes: SIZE - partSize, resumed: true });
      assert.equal(server.seen[1].range, `bytes=${partSize}-`);
      assert.equal(server.seen[1].ifRange, ETAG);
    },
  );

  await t.step("with retries, one call survives two drops by resuming", async () => {
    const server = startRangeServer({ dropAfter: 50_000, drops: 2 });
    const file = target();
    const waits: number[] = [];
    const result = await downloadRelease({
      ...downloadOptions(server, file),
      sleep: (ms) => Promise.resolve(void waits.push(ms)),
    });
    await server.close();
    await assertDownloaded(file);
    assert.equal(server.seen.length, 3);
    assert.equal(server.seen[0].range, null);
    assert.match(server.seen[1].range ?? "", /^bytes=\d+-$/);
    assert.match(server.seen[2].range ?? "", /^bytes=\d+-$/);
    assert.equal(result.resumed, true);
    assert.equal(result.receivedBytes, SIZE);
    assert.deepEqual(waits, [1000, 1000]);
  });

  await t.step("a server without Range support answers 200: the client restarts", async () => {
    const server = startRangeServer({ ranges: false, dropAfter: 120_000, drops: 1 });
    const file = target();
    const options = downloadOptions(server, file);
    await rejectsWith(downloadRelease({ ...options, retries: 0 }), "network");
    const result = await downloadRelease({ ...options, retries: 0 });
    await server.close();
    await assertDownloaded(file);
    assert.match(server.seen[1].range ?? "", /^bytes=\d+-$/);
    assert.deepEqual(result, { receivedBytes: SIZE, resumed: false });
  });

  await t.step("an If-Range that no longer matches gets 200 and a restart", async () => {
    const server = startRangeServer({ dropAfter: 70_000, drops: 1 });
    const file = target();
    const options = downloadOptions(server, file);
    await rejectsWith(downloadRelease({ ...options, retries: 0 }), "network");
    server.behaviour.etag = '"changed"';
    const result = await downloadRelease({ ...options, retries: 0 });
    await server.close();
    await assertDownloaded(file);
    assert.equal(server.seen[1].ifRange, ETAG);
    assert.equal(result.resumed, false);
  });

  await t.step("a part left for another release is thrown away", async () => {
    const server = startRangeServer();
    const file = target();
    await writePart(file, new Uint8Array(1000), {
      release_id: 6,
      checksum_sha256: "0".repeat(64),
      size_bytes: 1,
      etag: null,
    });
    await downloadRelease(downloadOptions(server, file));
    await server.close();
    await assertDownloaded(file);
    assert.equal(server.seen[0].range, null);
  });

  await t.step("a complete part is verified locally without a request", async () => {
    const server = startRangeServer();
    const file = target();
    await writePart(file, BYTES, PART_OF_RELEASE);
    const result = await downloadRelease(downloadOptions(server, file));
    await server.close();
    await assertDownloaded(file);
    assert.equal(server.seen.length, 0);
    assert.deepEqual(result, { receivedBytes: 0, resumed: true });
  });

  await t.step(
    "a damaged part fails the check after resuming, then one fresh try succeeds",
    async () => {
      const server = startRangeServer();
      const file = target();
      // The right state for the release, but zeros instead of its bytes.
      await writePart(file, new Uint8Array(100_000), PART_OF_RELEASE);
      const options = downloadOptions(server, file);
      const result = await downloadRelease({ ...options, ...noSleep });
      await server.close();
      await assertDownloaded(file);
      assert.deepEqual(server.seen.map((r) => r.range), ["bytes=100000-", null]);
      assert.equal(result.receivedBytes, SIZE * 2 - 100_000);
    },
  );

  await t.step("wrong bytes: checksum mismatch, nothing moved into place", async () => {
    const corrupt = BYTES.slice();
    corrupt[1234] ^= 0xff;
    const server = startRangeServer({ body: corrupt });
    const file = target();
    await Deno.writeTextFile(file, "the old version stays");
    await rejectsWith(
      downloadRelease(downloadOptions(server, file)),
      "integrity",
    );
    await server.close();
    assert.equal(await Deno.readTextFile(file), "the old version stays");
    assert.equal(await exists(`${file}.part`), false);
    assert.equal(await exists(`${file}.part.json`), false);
  });

  for (
    const [label, body] of [
      ["more bytes than announced: rejected while streaming", new Uint8Array(SIZE * 2)],
      ["fewer bytes than announced: size mismatch", BYTES.subarray(0, SIZE - 1)],
    ] as const
  ) {
    await t.step(label, async () => {
      const server = startRangeServer({ body });
      const file = target();
      await rejectsWith(downloadRelease(downloadOptions(server, file)), "integrity");
      await server.close();
      assert.equal(await exists(file), false);
      assert.equal(await exists(`${file}.part`), false);
    });
  }

  await t.step("429 waits for Retry-After, then succeeds", async () => {
    const server = startRangeServer({
      failures: [{ status: 429, headers: { "retry-after": "2" } }],
    });
    const file = target();
    const waits: number[] = [];
    const notices: RetryNotice[] = [];
    await downloadRelease({
      ...downloadOptions(server, file),
      sleep: (ms) => Promise.resolve(void waits.push(ms)),
      onRetry: (notice) => notices.push(notice),
    });
    await server.close();
    await assertDownloaded(file);
    assert.deepEqual(waits, [2000]);
    // The caller hears what it waits for, and for how long, before the wait.
    assert.equal(notices.length, 1);
    assert.equal(notices[0].kind, "rate_limited");
    assert.equal(notices[0].waitMs, 2000);
    assert.equal(notices[0].attempt, 1);
    assert.equal(notices[0].retries, 3);
    assert.match(notices[0].message, /^429 .*\/api\/v1\/releases\/7\/download/);
  });

  await t.step("429 until the retries run out, or a Retry-After too long to wait", async () => {
    const always = { status: 429, headers: { "retry-after": "1" } };
    const server = startRangeServer({ failures: [always, always, always] });
    const options = { baseUrl: server.baseUrl, apiKey: "k", release: releaseFor(), ...noSleep };
    await rejectsWith(
      downloadRelease({ ...options, target: target(), retries: 2 }),
      "rate_limited",
      429,
    );
    assert.equal(server.seen.length, 3);
    server.behaviour.failures.push({ status: 429, headers: { "retry-after": "3600" } });
    await rejectsWith(downloadRelease({ ...options, target: target() }), "rate_limited", 429);
    assert.equal(server.seen.length, 4);
    await server.close();
  });

  await t.step("401, 403, 404 and 500 fail at once with their kind", async () => {
    const server = startRangeServer({
      failures: [{ status: 401 }, { status: 403 }, { status: 404 }, { status: 500 }],
    });
    const options = { baseUrl: server.baseUrl, apiKey: "k", release: releaseFor(), ...noSleep };
    await rejectsWith(downloadRelease({ ...options, target: target() }), "auth", 401);
    await rejectsWith(downloadRelease({ ...options, target: target() }), "auth", 403);
    await rejectsWith(downloadRelease({ ...options, target: target() }), "not_found", 404);
    await rejectsWith(downloadRelease({ ...options, target: target() }), "server", 500);
    await server.close();
    assert.equal(server.seen.length, 4);
  });

  await t.step("a stalled transfer fails after the idle timeout and keeps the part", async () => {
    const server = startRangeServer({ dropAfter: 40_000, drops: 1, stall: true });
    const file = target();
    await rejectsWith(
      downloadRelease({
        ...downloadOptions(server, file),
        retries: 0,
        idleTimeoutMs: 300,
      }),
      "network",
    );
    await server.close();
    assert.ok((await Deno.stat(`${file}.part`)).size > 0);
  });

  await t.step("a refused connection is a network failure naming host and path", async () => {
    const server = startRangeServer();
    await server.close();
    const download = downloadRelease({ ...downloadOptions(server, target()), retries: 0 });
    await rejectsWith(download, "network");
    const error = await download.catch((error) => error);
    const { host } = new URL(server.baseUrl);
    assert.match(error.message, new RegExp(`reaching ${host}/api/v1/releases/7/download: `));
  });

  await t.step("checkForUpdate applies the version rule to the latest release", async () => {
    const server = startRangeServer();
    const options = { baseUrl: server.baseUrl, apiKey: "k", project: "desktop" };
    assert.equal((await checkForUpdate({ ...options, currentVersion: "1.9.9" })).available, true);
    assert.equal((await checkForUpdate({ ...options, currentVersion: "2.0.0" })).available, false);
    assert.equal((await checkForUpdate({ ...options, currentVersion: "v2.0.1" })).available, false);
    assert.equal((await checkForUpdate({ ...options, currentVersion: "nightly" })).available, true);
    await server.close();
  });

  await Deno.remove(dir, { recursive: true });
});
