/**
 * Several byte ranges from the s3 backend (radosgw), in `stream` and
 * `redirect` mode: a bucket answers one range per GET, so the service streams
 * the multipart answer itself in both (never a redirect), reading close
 * ascending ranges together (src/storage/spans.ts). One answer makes at most
 * S3_SPAN_BOUNDS.maxReads GETs of the bucket, counted by a proxy in front of
 * it, whatever the order of the ranges; past the bytes it may hold, the whole
 * file.
 */
import assert from "node:assert/strict";
import { S3_SPAN_BOUNDS } from "../src/storage/s3_read.ts";
import { createS3Store } from "../src/storage/s3_store.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";
import { rgwOfFile, rgwTest } from "./rgw.ts";
import { assertRangeParts } from "./multipart_ranges.ts";

/** Both tests take buckets of one radosgw. */
const rgwOfThisFile = rgwOfFile();

rgwTest("multi-range downloads from s3", async (t, rgw) => {
  for (const downloadMode of ["stream", "redirect"] as const) {
    await t.step(`${downloadMode}: byte for byte, in the order asked`, async () => {
      const artifacts = await createS3Store(await rgw.bucket(), 64 * 1024 * 1024);
      await using app = await createTestApp({ storage: "s3", downloadMode }, { artifacts });
      const project = await seedProject(app, { slug: "app" });
      const file = Uint8Array.from(
        { length: 3_000_000 },
        (_, i) => (i * 131 + (i >> 10)) & 0xff,
      );
      const release = await seedRelease(app, project.id, "1.0.0", file, {
        filename: "App Setup 1.0.0.exe",
        content_type: "application/octet-stream",
      });
      const { secret } = await seedKey(app);
      const get = (range: string) =>
        app.request(`/api/v1/releases/${release.id}/download`, secret, {
          headers: { range },
        });
      const check = async (ranges: [number, number][]) =>
        await assertRangeParts(
          await get("bytes=" + ranges.map(([a, b]) => `${a}-${b}`).join(",")),
          { file, ranges, contentType: "application/octet-stream" },
        );
      // adjacent, overlapping, reversed, far apart (separate reads of the bucket)
      await check([[0, 9], [10, 19], [15, 30], [2_900_000, 2_999_999], [5, 5]]);
      // 1,000 ascending ranges, as electron-updater sends them
      await check(
        Array.from({ length: 1000 }, (_, i) => [i * 2900, i * 2900 + 99] as [number, number]),
      );
    });
  }
}, rgwOfThisFile);

/** A TCP proxy to the store at `endpoint` counting the GET requests sent through it. */
function countingGets(endpoint: string) {
  const upstream = new URL(endpoint);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let gets = 0;
  const pipes: Promise<unknown>[] = [];
  const conns = new Set<Deno.Conn>();
  (async () => {
    for await (const client of listener) {
      conns.add(client);
      pipes.push((async () => {
        const server = await Deno.connect({
          hostname: upstream.hostname,
          port: Number(upstream.port),
        });
        conns.add(server);
        let tail = "";
        const counted = client.readable.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              // Request lines start a message; a GET has no body that could hold one.
              const text = tail + new TextDecoder("latin1").decode(chunk);
              gets += text.match(/(^|\r\n)GET \//g)?.length ?? 0;
              tail = text.slice(-8);
              controller.enqueue(chunk);
            },
          }),
        );
        await Promise.allSettled([
          counted.pipeTo(server.writable),
          server.readable.pipeTo(client.writable),
        ]);
      })());
    }
  })().catch(() => {});
  return {
    endpoint: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    gets: () => gets,
    reset: () => gets = 0,
    async [Symbol.asyncDispose]() {
      listener.close();
      // Idle keep-alive connections would stay open until the store's own timeout.
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* already closed */ }
      }
      await Promise.allSettled(pipes);
    },
  };
}

rgwTest("multi-range downloads from s3 make a bounded number of GETs", async (t, rgw) => {
  const bucket = await rgw.bucket();
  await using proxy = countingGets(bucket.endpoint!);
  const artifacts = await createS3Store({ ...bucket, endpoint: proxy.endpoint }, 64 * 1024 * 1024);
  await using app = await createTestApp({ storage: "s3", downloadMode: "stream" }, { artifacts });
  const project = await seedProject(app, { slug: "app" });
  const size = 12_000_000;
  const file = Uint8Array.from({ length: size }, (_, i) => (i * 131 + (i >> 10)) & 0xff);
  const release = await seedRelease(app, project.id, "1.0.0", file, {
    filename: "App Setup 1.0.0.exe",
    content_type: "application/octet-stream",
  });
  const { secret } = await seedKey(app);
  const get = (ranges: [number, number][]) =>
    app.request(`/api/v1/releases/${release.id}/download`, secret, {
      headers: { range: "bytes=" + ranges.map(([a, b]) => `${a}-${b}`).join(",") },
    });
  const max = S3_SPAN_BOUNDS.maxReads;
  const cases: Array<[string, [number, number][]]> = [
    [
      "2,000 descending",
      Array.from({ length: 2000 }, (_, i) => [(1999 - i) * 5900, (1999 - i) * 5900 + 9]),
    ],
    [
      "40 ascending, 300 KB apart",
      Array.from({ length: 40 }, (_, i) => [i * 300_000, i * 300_000 + 99]),
    ],
    [
      "2,000 overlapping and interleaved",
      Array.from({ length: 2000 }, (_, i) => {
        const start = ((i * 7919) % 2000) * 5900 + (i % 3) * 50;
        return [start, start + 199];
      }),
    ],
  ];
  for (const [name, ranges] of cases) {
    await t.step(`${name}: at most ${max} GETs, byte for byte in the order asked`, async () => {
      proxy.reset();
      await assertRangeParts(await get(ranges), {
        file,
        ranges,
        contentType: "application/octet-stream",
      });
      assert.ok(proxy.gets() >= 1 && proxy.gets() <= max, `${proxy.gets()} GETs`);
    });
  }

  await t.step("out of order past the bytes it may hold: the whole file, one GET", async () => {
    // 20 ranges of 500 KB, descending: 10 MB to hold, past the 8 MiB bound.
    const ranges = Array.from(
      { length: 20 },
      (_, i) => [(19 - i) * 600_000, (19 - i) * 600_000 + 499_999] as [number, number],
    );
    proxy.reset();
    const res = await get(ranges);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-length"), String(size));
    const body = new Uint8Array(await res.arrayBuffer());
    assert.equal(body.byteLength, size);
    assert.ok(body.every((byte, i) => byte === file[i]));
    assert.equal(proxy.gets(), 1);
  });
}, rgwOfThisFile);
