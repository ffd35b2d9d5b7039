/**
 * A download from the file store passes through one stream (the store's own,
 * which counts itself: src/lib/metered_stream.ts) and its delivered bytes are
 * still counted exactly: whole, cut off after any number of chunks, failed,
 * ended at shutdown.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { countingStream } from "../src/http/observe.ts";
import { createOpenResponses } from "../src/http/open_responses.ts";
import { createMetrics } from "../src/lib/metrics.ts";
import { attachMeter, meteredStream } from "../src/lib/metered_stream.ts";
import { CHUNK_SIZE, fileSliceStream } from "../src/storage/fs_store.ts";
import {
  createLoggingApp,
  createTestApp,
  patternBytes,
  seedKey,
  seedProject,
  seedRelease,
} from "./helpers.ts";

/** What `countingStream` reported, and the stream it returned. */
function counted(body: ReadableStream<Uint8Array>, open = createOpenResponses()) {
  const ends: Array<[number, boolean]> = [];
  let chunks = 0;
  const stream = countingStream(body, {
    onChunk: () => chunks++,
    onEnd: (bytes, complete) => ends.push([bytes, complete]),
    open,
  });
  return { stream, ends, chunks: () => chunks, open };
}

Deno.test("metered downloads: one stream, exact counts", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "uds-metered-" });
  const size = CHUNK_SIZE * 3 + 777;
  const bytes = patternBytes(size);
  const path = join(dir, "f");
  await Deno.writeFile(path, bytes);
  const slice = async (start = 0, length = size) =>
    await fileSliceStream(await Deno.open(path), { start, length });
  try {
    await t.step("a file's stream is counted without a second stream around it", async () => {
      const body = await slice();
      const { stream, ends } = counted(body);
      assert.equal(stream, body, "the file's own stream is sent");
      assert.deepEqual(new Uint8Array(await new Response(stream).arrayBuffer()), bytes);
      assert.deepEqual(ends, [[size, true]]);
    });

    await t.step("cut off after each number of chunks: exactly the chunks taken", async () => {
      for (let taken = 0; taken <= 3; taken++) {
        const { stream, ends, chunks, open } = counted(await slice());
        const reader = stream.getReader();
        for (let i = 0; i < taken; i++) assert.ok(!(await reader.read()).done);
        assert.equal(open.count(), 1);
        await reader.cancel();
        assert.deepEqual(ends, [[taken * CHUNK_SIZE, false]]);
        assert.equal(chunks(), taken);
        assert.equal(open.count(), 0);
      }
    });

    await t.step("a range from an offset: its length, complete", async () => {
      const { stream, ends } = counted(await slice(1000, CHUNK_SIZE + 5));
      const got = new Uint8Array(await new Response(stream).arrayBuffer());
      assert.deepEqual(got, bytes.subarray(1000, 1000 + CHUNK_SIZE + 5));
      assert.deepEqual(ends, [[CHUNK_SIZE + 5, true]]);
    });

    await t.step("a file that ends early: the bytes taken, not complete", async () => {
      const { stream, ends } = counted(await slice(size - 10, 20));
      await assert.rejects(new Response(stream).arrayBuffer(), /ended 10 bytes early/);
      assert.deepEqual(ends, [[0, false]]);
    });

    await t.step("ended from outside (shutdown): once, with the bytes so far", async () => {
      const { stream, ends, open } = counted(await slice());
      const reader = stream.getReader();
      await reader.read();
      open.endAll();
      await reader.cancel();
      assert.deepEqual(ends, [[CHUNK_SIZE, false]]);
    });

    await t.step("a stream already read or metered is wrapped instead", async () => {
      const body = meteredStream((meter) => ({
        pull(controller) {
          meter.chunk(3);
          controller.enqueue(new Uint8Array(3));
        },
      }));
      assert.ok(attachMeter(body, { chunk: () => {}, end: () => {} }));
      assert.equal(attachMeter(body, { chunk: () => {}, end: () => {} }), false);
      const { stream } = counted(body);
      assert.notEqual(stream, body);
      await stream.cancel();
      // Any other stream is wrapped: counted as its chunks are taken.
      const other = ReadableStream.from([new Uint8Array(4), new Uint8Array(5)]);
      const wrapped = counted(other);
      assert.notEqual(wrapped.stream, other);
      await new Response(wrapped.stream).arrayBuffer();
      assert.deepEqual(wrapped.ends, [[9, true]]);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("metered downloads: the access log and metrics count the bytes taken", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const size = CHUNK_SIZE * 4 + 123;
  const release = await seedRelease(app, project.id, "1.0.0", patternBytes(size));
  const { secret } = await seedKey(app);
  const lines: string[] = [];
  const metrics = createMetrics();
  const logged = createLoggingApp(app, lines, metrics);
  const download = (headers: Record<string, string> = {}) =>
    logged.fetch(
      new Request(`http://localhost/api/v1/releases/${release.id}/download`, {
        headers: { authorization: `Bearer ${secret}`, ...headers },
      }),
      { remoteAddr: { transport: "tcp", hostname: "192.0.2.7", port: 40000 } },
    );
  const sentBytes = async () =>
    Number(/^uds_artifact_download_bytes_total (\d+)/m.exec(await metrics.render())?.[1] ?? 0);

  await t.step("whole, then cut off after two chunks", async () => {
    const whole = await download();
    assert.equal((await whole.arrayBuffer()).byteLength, size);
    const cut = await download();
    const reader = cut.body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    const entries = lines.map((line) => JSON.parse(line));
    assert.deepEqual(entries.map((e) => [e.bytes, e.aborted ?? false]), [
      [size, false],
      [2 * CHUNK_SIZE, true],
    ]);
    assert.equal(await sentBytes(), size + 2 * CHUNK_SIZE);
  });

  await t.step("a range, read to its end", async () => {
    lines.length = 0;
    const res = await download({ range: `bytes=10-${CHUNK_SIZE + 9}` });
    assert.equal(res.status, 206);
    assert.equal((await res.arrayBuffer()).byteLength, CHUNK_SIZE);
    assert.deepEqual(JSON.parse(lines[0]).bytes, CHUNK_SIZE);
    assert.equal(await sentBytes(), size + 3 * CHUNK_SIZE);
  });
});
