/**
 * Several byte ranges in one request (src/client_api/byte_ranges.ts): a `206` of
 * `multipart/byteranges`, one part per satisfiable range in the order asked,
 * checked byte for byte against the file, on the API download and the feed
 * file route; the bounds (ranges, total bytes) give the whole file; HEAD and
 * If-Range as for a single range; `curl -r 0-9,100-109` over real HTTP; the
 * download's Content-Security-Policy, streamed or handed to nginx.
 */
import assert from "node:assert/strict";
import { MAX_RANGES, parseRangeSet } from "../src/client_api/byte_ranges.ts";
import {
  groupSpans,
  planSpans,
  type Span,
  type SpanSource,
  spansStream,
} from "../src/storage/spans.ts";
import { createTestApp, seedRangeDownload, sha256 } from "./helpers.ts";
import { assertRangeParts, multipartParts } from "./multipart_ranges.ts";

Deno.test("parseRangeSet: two or more ranges, in order, bounded", async (t) => {
  await t.step("kept as asked: overlapping, reversed, suffix; the end clipped", () => {
    assert.deepEqual(parseRangeSet("bytes=5-6, 0-1,-2,8-", 10), [
      { start: 5, end: 6 },
      { start: 0, end: 1 },
      { start: 8, end: 9 },
      { start: 8, end: 9 },
    ]);
    assert.deepEqual(parseRangeSet("bytes=0-3,2-5", 10), [{ start: 0, end: 3 }, {
      start: 2,
      end: 5,
    }]);
  });
  await t.step("unsatisfiable ranges are left out; none left is unsatisfiable", () => {
    assert.deepEqual(parseRangeSet("bytes=0-1,10-20", 10), [{ start: 0, end: 1 }]);
    assert.equal(parseRangeSet("bytes=10-,20-30,-0", 10), "unsatisfiable");
  });
  await t.step("null: fewer than two, malformed anywhere, past the bounds", () => {
    for (
      const header of [
        null,
        "bytes=0-1",
        "bytes=0-1,",
        "bytes=0-1,x",
        "bytes=0-1,5-2",
        "items=0-1,2-3",
        "bytes=0-5,0-5", // 12 bytes of a 10-byte file
      ]
    ) {
      assert.equal(parseRangeSet(header, 10), null, String(header));
    }
    const many = (n: number) =>
      "bytes=" + Array.from({ length: n }, (_, i) => `${i}-${i}`).join(",");
    assert.equal((parseRangeSet(many(MAX_RANGES), 10_000) as unknown[]).length, MAX_RANGES);
    assert.equal(parseRangeSet(many(MAX_RANGES + 1), 10_000), null);
  });
});

Deno.test("groupSpans: close ascending spans share one read", () => {
  const reads = groupSpans([
    { start: 0, length: 10 },
    { start: 20, length: 10 },
    { start: 5, length: 2 }, // backwards: a read of its own
    { start: 1000, length: 1 }, // too far
  ], 100);
  assert.deepEqual(reads.map((r) => [r.start, r.end, r.spans.length]), [
    [0, 30, 2],
    [5, 7, 1],
    [1000, 1001, 1],
  ]);
});

/** A virtual file (none of it held): the byte at `i` is PATTERN[i % PERIOD], a prime period. */
const PERIOD = 65_537;
const PATTERN = Uint8Array.from(
  { length: 2 * PERIOD + 65_536 },
  (_, i) => ((i % PERIOD) * 131 + ((i % PERIOD) >> 10)) & 0xff,
);
const byteAt = (i: number) => PATTERN[i % PERIOD];

/** A source of that file counting its reads and bytes, answering in 64 KiB chunks. */
function countingSource() {
  const counted = { reads: 0, bytes: 0 };
  async function* chunks(start: number, length: number) {
    for (let at = start; at < start + length; at += 65_536) {
      const size = Math.min(65_536, start + length - at);
      yield PATTERN.subarray(at % PERIOD, (at % PERIOD) + size);
    }
  }
  const source: SpanSource = {
    read(start, length) {
      counted.reads++;
      counted.bytes += length;
      return Promise.resolve(ReadableStream.from(chunks(start, length)));
    },
    close() {},
  };
  return { counted, source };
}

Deno.test("planSpans: bounded reads, answered in the order asked", async (t) => {
  const bounds = { maxReads: 16, bufferBytes: 1_000_000 };
  const cases: Array<[string, Span[]]> = [
    [
      "2,000 descending, close",
      Array.from({ length: 2000 }, (_, i) => ({
        start: (1999 - i) * 1900,
        length: 10,
      })),
    ],
    [
      "1,000 ascending, 1 MB apart",
      Array.from({ length: 1000 }, (_, i) => ({
        start: i * 1_000_000,
        length: 100,
      })),
    ],
    [
      "500 descending, 1 MB apart",
      Array.from({ length: 500 }, (_, i) => ({
        start: (499 - i) * 1_000_000,
        length: 100,
      })),
    ],
    [
      "overlapping and interleaved",
      Array.from({ length: 2000 }, (_, i) => ({
        start: ((i * 7919) % 2000) * 100_000 + (i % 3) * 50,
        length: 200,
      })),
    ],
  ];
  for (const [name, spans] of cases) {
    await t.step(`${name}: at most ${bounds.maxReads} reads, byte for byte`, async () => {
      const plan = planSpans(spans, bounds)!;
      assert.ok(plan !== null);
      const { counted, source } = countingSource();
      const got = new Uint8Array(
        await new Response(spansStream(plan, spans, source)).arrayBuffer(),
      );
      assert.ok(counted.reads <= bounds.maxReads, `${counted.reads} reads`);
      const last = Math.max(...spans.map((span) => span.start + span.length));
      assert.ok(counted.bytes <= last, `${counted.bytes} bytes read`);
      let at = 0;
      for (const span of spans) {
        for (let i = 0; i < span.length; i++) {
          if (got[at + i] !== byteAt(span.start + i)) assert.fail(`byte ${i} of ${span.start}`);
        }
        at += span.length;
      }
      assert.equal(got.byteLength, at);
    });
  }
  await t.step("within the bounds in the order asked: read as asked, nothing held", () => {
    const spans = [{ start: 0, length: 10 }, { start: 5, length: 2 }, { start: 3, length: 3 }];
    const plan = planSpans(spans, bounds)!;
    assert.equal(plan.held, false);
    assert.deepEqual(plan.reads.map((read) => [read.start, read.end]), [[0, 10], [5, 7], [3, 6]]);
  });
  await t.step("out of order past the bytes that may be held: null (the whole file)", () => {
    const spans = Array.from(
      { length: 20 },
      (_, i) => ({ start: (19 - i) * 400_000, length: 60_000 }),
    );
    assert.equal(planSpans(spans, bounds), null);
    assert.equal(planSpans(spans)?.reads.length, 20, "unbounded: read as asked");
  });
});

Deno.test("multi-range downloads", async (t) => {
  await using app = await createTestApp();
  const { bytes, release, etag, secret } = await seedRangeDownload(app);
  const SIZE = bytes.length;
  const paths = [
    `/api/v1/releases/${release.id}/download`,
    `/feeds/files/${release.id}/desktop-2.0.0.zip`,
  ];

  const assertParts = async (res: Response, ranges: [number, number][]) => {
    assert.equal(res.headers.get("etag"), etag);
    assert.equal(res.headers.get("accept-ranges"), "bytes");
    await assertRangeParts(res, { file: bytes, ranges, contentType: "application/zip" });
  };

  for (const path of paths) {
    const get = (headers: Record<string, string> = {}, method = "GET") =>
      app.request(path, secret, { method, headers });

    await t.step(`${path}: adjacent, overlapping, reversed, suffix`, async () => {
      await assertParts(await get({ range: "bytes=0-9,10-19" }), [[0, 9], [10, 19]]);
      await assertParts(await get({ range: "bytes=100-199, 150-249" }), [[100, 199], [150, 249]]);
      await assertParts(await get({ range: "bytes=900000-900010,5-6,0-0" }), [
        [900000, 900010],
        [5, 6],
        [0, 0],
      ]);
      await assertParts(await get({ range: "bytes=-100,0-99" }), [[SIZE - 100, SIZE - 1], [0, 99]]);
      await assertParts(await get({ range: "bytes=999990-,-5" }), [[999990, SIZE - 1], [
        SIZE - 5,
        SIZE - 1,
      ]]);
    });

    await t.step(`${path}: out of bounds`, async () => {
      // Ranges beyond the end are left out; the end of one past it is clipped.
      await assertParts(await get({ range: "bytes=0-9,2000000-,999999-5000000" }), [[0, 9], [
        999999,
        999999,
      ]]);
      // Only one left: a single range.
      const single = await get({ range: "bytes=2000000-,10-19" });
      assert.equal(single.status, 206);
      assert.equal(single.headers.get("content-range"), `bytes 10-19/${SIZE}`);
      assert.deepEqual(new Uint8Array(await single.arrayBuffer()), bytes.subarray(10, 20));
      // None left: 416.
      const none = await get({ range: "bytes=2000000-,3000000-3000001" });
      assert.equal(none.status, 416);
      assert.equal(none.headers.get("content-range"), `bytes */${SIZE}`);
      assert.deepEqual(await none.json(), { error: "range not satisfiable" });
    });

    await t.step(`${path}: 1,000 ranges, as electron-updater sends them`, async () => {
      const ranges = Array.from(
        { length: 1000 },
        (_, i) => [i * 997, i * 997 + (i % 7) * 13] as [number, number],
      );
      const header = "bytes=" + ranges.map(([a, b]) => `${a}-${b}`).join(", ");
      await assertParts(await get({ range: header }), ranges);
    });

    await t.step(`${path}: past the bounds the whole file`, async () => {
      const over = "bytes=" +
        Array.from({ length: MAX_RANGES + 1 }, (_, i) => `${i * 10}-${i * 10}`).join(",");
      for (const range of [over, "bytes=0-699999,300000-"]) {
        const res = await get({ range });
        assert.equal(res.status, 200);
        assert.equal(sha256(new Uint8Array(await res.arrayBuffer())), release.checksum_sha256);
      }
    });

    await t.step(`${path}: HEAD ignores them; If-Range decides as for one range`, async () => {
      const head = await get({ range: "bytes=0-9,20-29" }, "HEAD");
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), String(SIZE));
      await assertParts(await get({ range: "bytes=0-9,20-29", "if-range": etag }), [[0, 9], [
        20,
        29,
      ]]);
      const stale = await get({ range: "bytes=0-9,20-29", "if-range": '"other"' });
      assert.equal(stale.status, 200);
      assert.equal(sha256(new Uint8Array(await stale.arrayBuffer())), release.checksum_sha256);
    });
  }

  await t.step("a cancelled multipart answer closes the file", async () => {
    const res = await app.request(paths[0], secret, { headers: { range: "bytes=0-9,500000-" } });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
  });

  await t.step("curl -r 0-9,100-109 over HTTP", async () => {
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      (request, info) => app.app.fetch(request, info),
    );
    try {
      const out = await new Deno.Command("curl", {
        args: [
          "-sS",
          "-D",
          "/dev/stderr",
          "-r",
          "0-9,100-109",
          "-H",
          `authorization: Bearer ${secret}`,
          `http://127.0.0.1:${server.addr.port}${paths[0]}`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const headers = new TextDecoder().decode(out.stderr);
      assert.match(headers, /^HTTP\/1\.1 206/);
      const type = /^content-type: (.+)\r$/im.exec(headers)![1];
      const parts = multipartParts(type, out.stdout);
      assert.deepEqual(parts.map((p) => p.contentRange), [
        `bytes 0-9/${SIZE}`,
        `bytes 100-109/${SIZE}`,
      ]);
      assert.deepEqual(parts[1].body, bytes.subarray(100, 110));
    } finally {
      await server.shutdown();
    }
  });
});

Deno.test("multi-range downloads carry the download's Content-Security-Policy", async (t) => {
  const secret = "test-x-accel-secret-0123456789";
  await using app = await createTestApp({ downloadMode: "x-accel", xAccelSecret: secret });
  const download = await seedRangeDownload(app);
  const path = `/api/v1/releases/${download.release.id}/download`;
  const get = (headers: Record<string, string>) =>
    app.request(path, download.secret, { headers: { range: "bytes=0-9,20-29", ...headers } });

  await t.step("streamed (a request that did not come through nginx)", async () => {
    const res = await get({});
    assert.equal(res.status, 206);
    assert.equal(res.headers.get("content-security-policy"), "sandbox");
    await res.body?.cancel();
  });

  await t.step("handed to nginx", async () => {
    const res = await get({ "x-accel-secret": secret });
    assert.ok(res.headers.get("x-accel-redirect"));
    assert.equal(res.headers.get("content-security-policy"), "sandbox");
  });
});
