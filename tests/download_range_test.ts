/**
 * Resumable downloads (an extension beyond the v1 contract): ETag and
 * Accept-Ranges, single byte ranges with 206, 416 beyond the end, If-Range,
 * HEAD, the download counter and the access log for partial answers, and the
 * reference client resuming against the real app.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { downloadRelease, type Release as ClientRelease } from "../client/update_client.ts";
import { parseRange } from "../src/client_api/download.ts";
import { CHUNK_SIZE, fileSliceStream } from "../src/storage/fs_store.ts";
import { assertError, assertProtectedHeaders, assertSecurityHeaders, readJson } from "./asserts.ts";
import {
  concatBytes,
  createLoggingApp,
  createTestApp,
  downloadCount,
  patternBytes,
  seedRangeDownload,
  seedRelease,
  sha256,
  testMetrics,
} from "./helpers.ts";

/** Open descriptors of this process, counted by `ls` (the test task may not read /proc). */
async function openFiles(): Promise<number> {
  const { stdout } = await new Deno.Command("ls", { args: [`/proc/${Deno.pid}/fd`] }).output();
  return new TextDecoder().decode(stdout).trim().split("\n").length;
}

Deno.test("parseRange: single byte ranges, RFC 9110 section 14", async (t) => {
  await t.step("a-b, a-, -n; the end is clipped to the file", () => {
    assert.deepEqual(parseRange("bytes=0-0", 10), { start: 0, end: 0 });
    assert.deepEqual(parseRange("bytes=2-5", 10), { start: 2, end: 5 });
    assert.deepEqual(parseRange("bytes=4-", 10), { start: 4, end: 9 });
    assert.deepEqual(parseRange("bytes=-3", 10), { start: 7, end: 9 });
    assert.deepEqual(parseRange("bytes=-30", 10), { start: 0, end: 9 });
    assert.deepEqual(parseRange("bytes=5-999", 10), { start: 5, end: 9 });
    assert.deepEqual(parseRange("bytes=9-99999999999999999999999", 10), { start: 9, end: 9 });
  });

  await t.step("the unit is case-insensitive; spaces and empty list elements are allowed", () => {
    assert.deepEqual(parseRange("Bytes=1-2", 10), { start: 1, end: 2 });
    assert.deepEqual(parseRange("bytes= 1-2 ", 10), { start: 1, end: 2 });
    assert.deepEqual(parseRange("bytes=1-2,", 10), { start: 1, end: 2 });
    assert.deepEqual(parseRange("bytes=, 1-2", 10), { start: 1, end: 2 });
  });

  await t.step("unsatisfiable: start at or beyond the end, an empty suffix", () => {
    assert.equal(parseRange("bytes=10-", 10), "unsatisfiable");
    assert.equal(parseRange("bytes=10-20", 10), "unsatisfiable");
    assert.equal(parseRange("bytes=99999999999999999999999-", 10), "unsatisfiable");
    assert.equal(parseRange("bytes=-0", 10), "unsatisfiable");
    assert.equal(parseRange("bytes=0-", 0), "unsatisfiable");
  });

  await t.step("ignored (null): absent, malformed, other units, several ranges", () => {
    for (
      const header of [
        null,
        undefined,
        "",
        "bytes",
        "bytes=",
        "bytes=-",
        "bytes=5-2",
        "bytes=a-b",
        "bytes=1.5-2",
        "bytes=+1-2",
        "bytes=0x10-",
        "bytes=1 -2",
        "items=0-1",
        "0-1",
        "bytes=0-1,3-4",
        "bytes=0-1, 20-30",
        "bytes=-1,-2",
      ]
    ) {
      assert.equal(parseRange(header, 10), null, String(header));
    }
  });
});

Deno.test("fileSliceStream: exactly N bytes from an offset, in large chunks, then closed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "uds-slice-" });
  try {
    const bytes = patternBytes(CHUNK_SIZE * 3 + 1234);
    const path = join(dir, "f");
    await Deno.writeFile(path, bytes);
    const start = 1000, length = CHUNK_SIZE * 2 + 500;
    const stream = await fileSliceStream(await Deno.open(path), { start, length });
    const chunks: Uint8Array[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.deepEqual(chunks.map((c) => c.byteLength), [CHUNK_SIZE, CHUNK_SIZE, 500]);
    assert.deepEqual(
      concatBytes(...chunks),
      bytes.subarray(1000, start + length),
    );

    // A file shorter than promised fails the stream instead of ending it early.
    const short = await fileSliceStream(await Deno.open(path), {
      start: bytes.length - 10,
      length: 20,
    });
    await assert.rejects(new Response(short).arrayBuffer(), /ended 10 bytes early/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("download ranges", async (t) => {
  await using app = await createTestApp();
  const { project, bytes, release, etag, secret } = await seedRangeDownload(app);
  const SIZE = bytes.length;
  const path = `/api/v1/releases/${release.id}/download`;
  const get = (headers: Record<string, string> = {}, method = "GET") =>
    app.request(path, secret, { method, headers });

  /** Asserts a 206 of bytes start..end (inclusive) with every header, and its body. */
  async function assertPartial(res: Response, start: number, end: number) {
    const body = new Uint8Array(await res.arrayBuffer());
    assert.equal(res.status, 206);
    assert.equal(res.headers.get("content-range"), `bytes ${start}-${end}/${SIZE}`);
    assert.equal(res.headers.get("content-length"), String(end - start + 1));
    assert.equal(res.headers.get("etag"), etag);
    assert.equal(res.headers.get("accept-ranges"), "bytes");
    assert.equal(res.headers.get("content-type"), "application/zip");
    assert.equal(res.headers.get("content-disposition"), "attachment; filename=desktop-2.0.0.zip");
    assertProtectedHeaders(res);
    assertSecurityHeaders(res);
    assert.equal(body.byteLength, end - start + 1);
    assert.deepEqual(body, bytes.subarray(start, end + 1));
  }

  /** Asserts the plain 200 of the whole artifact. */
  async function assertFull(res: Response) {
    const body = new Uint8Array(await res.arrayBuffer());
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-range"), null);
    assert.equal(res.headers.get("content-length"), String(SIZE));
    assert.equal(res.headers.get("etag"), etag);
    assert.equal(res.headers.get("accept-ranges"), "bytes");
    assert.equal(sha256(body), release.checksum_sha256);
  }

  await t.step("200 carries a strong ETag (the SHA-256) and Accept-Ranges: bytes", async () => {
    const res = await get();
    assert.equal(res.headers.get("etag"), `"${sha256(bytes)}"`);
    assert.equal(res.headers.get("content-type"), "application/zip");
    assert.equal(res.headers.get("content-disposition"), "attachment; filename=desktop-2.0.0.zip");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assertProtectedHeaders(res);
    assertSecurityHeaders(res);
    await assertFull(res);
  });

  await t.step("bytes=a-b", async () => {
    await assertPartial(await get({ range: "bytes=0-0" }), 0, 0);
    await assertPartial(await get({ range: "bytes=100-199" }), 100, 199);
    await assertPartial(await get({ range: "bytes=300000-700000" }), 300_000, 700_000);
    await assertPartial(await get({ range: `bytes=${SIZE - 1}-${SIZE - 1}` }), SIZE - 1, SIZE - 1);
  });

  await t.step("bytes=a- to the end", async () => {
    await assertPartial(await get({ range: "bytes=123457-" }), 123_457, SIZE - 1);
    await assertPartial(await get({ range: "bytes=0-" }), 0, SIZE - 1);
  });

  await t.step(
    "bytes=-n: the last n bytes; a suffix longer than the file is all of it",
    async () => {
      await assertPartial(await get({ range: "bytes=-500" }), SIZE - 500, SIZE - 1);
      await assertPartial(await get({ range: `bytes=-${SIZE * 2}` }), 0, SIZE - 1);
    },
  );

  await t.step("an end beyond the size is clipped", async () => {
    await assertPartial(await get({ range: `bytes=999000-${SIZE * 10}` }), 999_000, SIZE - 1);
  });

  await t.step(
    "416 for a start at or beyond the end: JSON error, Content-Range */size",
    async () => {
      for (const range of [`bytes=${SIZE}-`, `bytes=${SIZE + 5}-${SIZE + 10}`, "bytes=-0"]) {
        const res = await get({ range });
        assert.equal(res.headers.get("content-range"), `bytes */${SIZE}`, range);
        assertProtectedHeaders(res);
        assertSecurityHeaders(res);
        await assertError(res, 416, "range not satisfiable");
      }
      const head = await get({ range: `bytes=${SIZE}-` }, "HEAD");
      assert.equal(head.status, 200, "HEAD ignores Range");
      assert.equal(head.headers.get("content-range"), null);
      assert.equal(await head.text(), "");
    },
  );

  await t.step("malformed ranges and other units get the whole file", async () => {
    // Several ranges: tests/multi_range_test.ts.
    for (const range of ["bytes=5-2", "bytes=x-", "items=0-9", "bytes=0-1,x-"]) {
      await assertFull(await get({ range }));
    }
  });

  await t.step("If-Range: the current ETag gets 206; anything else the whole file", async () => {
    await assertPartial(await get({ range: "bytes=10-", "if-range": etag }), 10, SIZE - 1);
    for (
      const ifRange of [
        `"${"0".repeat(64)}"`,
        `W/${etag}`,
        release.checksum_sha256, // unquoted
        new Date(Date.now() + 86_400_000).toUTCString(), // a date, even a future one
      ]
    ) {
      await assertFull(await get({ range: "bytes=10-", "if-range": ifRange }));
    }
    // Without Range, If-Range changes nothing.
    await assertFull(await get({ "if-range": `"other"` }));
  });

  await t.step("HEAD ignores Range (RFC 9110 14.2): the 200 headers and no body", async () => {
    const res = await get({ range: "bytes=1000-1999" }, "HEAD");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-range"), null);
    assert.equal(res.headers.get("content-length"), String(SIZE));
    assert.equal(res.headers.get("etag"), etag);
    assert.equal(res.headers.get("accept-ranges"), "bytes");
    assert.equal(res.headers.get("content-type"), "application/zip");
    assertProtectedHeaders(res);
    assert.equal(await res.text(), "");

    const full = await get({}, "HEAD");
    assert.equal(full.status, 200);
    assert.equal(full.headers.get("content-length"), String(SIZE));
    assert.equal(full.headers.get("etag"), etag);
    assert.equal(full.headers.get("accept-ranges"), "bytes");
    assert.equal(await full.text(), "");
  });

  await t.step("sizes come from the file on disk, so Content-Range is always true", async () => {
    const other = await seedRelease(app, project.id, "2.0.1", patternBytes(5000));
    await Deno.truncate(join(app.config.artifactsDir, other.storage_key), 3000);
    const res = await app.request(`/api/v1/releases/${other.id}/download`, secret, {
      headers: { range: "bytes=2000-" },
    });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get("content-range"), "bytes 2000-2999/3000");
    assert.equal((await res.arrayBuffer()).byteLength, 1000);
    await assertError(
      await app.request(`/api/v1/releases/${other.id}/download`, secret, {
        headers: { range: "bytes=3000-" },
      }),
      416,
      "range not satisfiable",
    );
  });

  await t.step("a range of a missing file is still 404 release not found", async () => {
    const gone = await seedRelease(app, project.id, "2.0.2");
    await Deno.remove(join(app.config.artifactsDir, gone.storage_key));
    const res = await app.request(`/api/v1/releases/${gone.id}/download`, secret, {
      headers: { range: "bytes=0-" },
    });
    await assertError(res, 404, "release not found");
  });

  await t.step("a resumed download joins to the checksum and counts once", async () => {
    const fresh = await seedRelease(app, project.id, "2.1.0", patternBytes(SIZE + 17));
    const url = `/api/v1/releases/${fresh.id}/download`;
    const before = await downloadCount(app.store, fresh.id);

    // The first attempt is cut after a few chunks.
    const first = await app.request(url, secret);
    assert.equal(first.status, 200);
    const firstEtag = first.headers.get("etag")!;
    const reader = first.body!.getReader();
    const parts: Uint8Array[] = [];
    let got = 0;
    while (got < 300_000) {
      const { value, done } = await reader.read();
      assert.ok(!done);
      parts.push(value);
      got += value.byteLength;
    }
    await reader.cancel();
    assert.ok(got < fresh.size_bytes);

    // The second asks for the rest, guarded by the ETag of the first.
    const rest = await app.request(url, secret, {
      headers: { range: `bytes=${got}-`, "if-range": firstEtag },
    });
    assert.equal(rest.status, 206);
    assert.equal(
      rest.headers.get("content-range"),
      `bytes ${got}-${fresh.size_bytes - 1}/${fresh.size_bytes}`,
    );
    assert.equal(rest.headers.get("content-length"), String(fresh.size_bytes - got));
    parts.push(new Uint8Array(await rest.arrayBuffer()));
    const joined = concatBytes(...parts);
    assert.equal(joined.byteLength, fresh.size_bytes);
    assert.equal(sha256(joined), fresh.checksum_sha256);
    assert.equal(await downloadCount(app.store, fresh.id), before + 1);
  });

  await t.step("the counter: GETs answered with the whole file count; nothing else", async () => {
    const counted = await seedRelease(app, project.id, "2.2.0", patternBytes(10_000));
    const url = `/api/v1/releases/${counted.id}/download`;
    const send = async (headers: Record<string, string>, method = "GET") => {
      await (await app.request(url, secret, { method, headers })).arrayBuffer();
    };
    await send({}); // 1
    await send({ range: "bytes=0-" }); // 2: a range that is the whole file
    await send({ range: "bytes=-10000" }); // 3: a suffix that is the whole file
    await send({ range: "bytes=0-0" }); // a probe
    await send({ range: "bytes=0-99" });
    await send({ range: "bytes=100-" });
    await send({ range: "bytes=-10" });
    await send({ range: "bytes=10000-" }); // 416
    await send({}, "HEAD");
    await send({ range: "bytes=0-" }, "HEAD");
    assert.equal(await downloadCount(app.store, counted.id), 3);
  });

  await t.step("access log and metrics: a 206 sent whole is a complete download", async () => {
    const lines: string[] = [];
    const logging = createLoggingApp(app, lines);
    const request = (headers: Record<string, string>) =>
      logging.fetch(
        new Request(`http://localhost${path}`, {
          headers: { authorization: `Bearer ${secret}`, ...headers },
        }),
        { remoteAddr: { transport: "tcp", hostname: "192.0.2.7", port: 40000 } },
      );
    const complete = () => metric('uds_artifact_downloads_total{result="complete"}');
    const sent = () => metric("uds_artifact_download_bytes_total");
    const [complete0, sent0] = [await complete(), await sent()];

    const res = await request({ range: "bytes=400000-" });
    assert.equal(res.status, 206);
    assert.equal((await res.arrayBuffer()).byteLength, SIZE - 400_000);
    const entry = JSON.parse(lines[0]);
    assert.equal(entry.status, 206);
    assert.equal(entry.bytes, SIZE - 400_000);
    assert.equal(entry.release_id, release.id);
    assert.equal(entry.aborted, undefined);
    assert.equal(await complete(), complete0 + 1);
    assert.equal(await sent(), sent0 + SIZE - 400_000);

    // Cut short, a 206 is aborted like a 200.
    const cut = await request({ range: "bytes=0-" });
    const reader = cut.body!.getReader();
    await reader.read();
    await reader.cancel();
    const aborted = JSON.parse(lines[1]);
    assert.equal(aborted.status, 206);
    assert.equal(aborted.aborted, true);
    assert.ok(aborted.bytes > 0 && aborted.bytes < SIZE);

    // A 416 is an ordinary JSON answer, not a download.
    await (await request({ range: `bytes=${SIZE}-` })).arrayBuffer();
    const refused = JSON.parse(lines[2]);
    assert.equal(refused.status, 416);
    assert.equal(refused.bytes, JSON.stringify({ error: "range not satisfiable" }).length);
    assert.equal(await complete(), complete0 + 1);
  });

  await t.step({
    name: "HEAD with Range, 416 and a cancelled 206 leave no file open",
    ignore: Deno.build.os !== "linux",
    fn: async () => {
      const before = await openFiles();
      for (let i = 0; i < 20; i++) {
        await (await get({ range: "bytes=0-9" }, "HEAD")).text();
        await (await get({ range: `bytes=${SIZE}-` })).text();
        const res = await get({ range: "bytes=10-" });
        const reader = res.body!.getReader();
        await reader.read();
        await reader.cancel();
      }
      const leaked = (await openFiles()) - before;
      assert.ok(leaked < 5, `${leaked} descriptors leaked`);
    },
  });

  await t.step(
    "the reference client resumes against this server after a dropped connection",
    async () => {
      const dir = await Deno.makeTempDir({ prefix: "uds-range-client-" });
      try {
        const meta = await readJson(
          await app.request(`/api/v1/releases/${release.id}`, secret),
          200,
        );
        const seen: { range: string | null; ifRange: string | null; status: number }[] = [];
        let drops = 1;
        // The app behind a fetch whose first download response breaks off after 300 000 bytes.
        const viaApp: typeof fetch = async (input, init) => {
          const request = new Request(input, init);
          const res = await app.app.request(request);
          seen.push({
            range: request.headers.get("range"),
            ifRange: request.headers.get("if-range"),
            status: res.status,
          });
          if (drops === 0 || res.body === null) return res;
          drops--;
          return new Response(dropAfter(res.body, 300_000), res);
        };
        const target = join(dir, "desktop.zip");
        const result = await downloadRelease({
          baseUrl: "http://updates.test",
          apiKey: secret,
          release: meta.release as ClientRelease,
          target,
          fetch: viaApp,
          sleep: () => Promise.resolve(),
        });
        assert.equal(result.resumed, true);
        assert.equal(sha256(await Deno.readFile(target)), release.checksum_sha256);
        assert.equal(seen.length, 2);
        assert.deepEqual(seen[0], { range: null, ifRange: null, status: 200 });
        assert.match(seen[1].range ?? "", /^bytes=\d+-$/);
        assert.equal(seen[1].ifRange, etag);
        assert.equal(seen[1].status, 206);
        assert.equal(result.receivedBytes, SIZE, "the second request did not start over");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  );
});

/** Passes `body` through until `limit` bytes, then fails like a dropped connection. */
function dropAfter(body: ReadableStream<Uint8Array>, limit: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= limit) {
        await reader.cancel();
        controller.error(new TypeError("connection dropped on purpose"));
        return;
      }
      const { value, done } = await reader.read();
      if (done) return controller.close();
      const piece = value.subarray(0, limit - sent);
      sent += piece.byteLength;
      controller.enqueue(piece);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

async function metric(series: string): Promise<number> {
  for (const line of (await testMetrics.render()).split("\n")) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return 0;
}
