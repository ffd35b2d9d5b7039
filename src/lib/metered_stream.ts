/**
 * Byte streams that count their own chunks. Whoever sends such a stream (the
 * observer of src/http/observe.ts, for downloads) attaches a {@link Meter} to
 * it instead of wrapping it in a second, counting stream: a download then
 * passes through one ReadableStream, one promise a chunk, and no more
 * (docs/benchmarks.md "Downloads").
 *
 * A metered stream has a high-water mark of 0, so a chunk is read from its
 * source only when a reader asks for one and is counted as it is handed to
 * that reader: the count is of the bytes the reader took, exactly as a
 * counting wrapper with a high-water mark of 0 would count them.
 */

/** What a metered stream reports to whoever attached to it. */
export interface Meter {
  /** A chunk of `bytes` was handed to the stream's reader. */
  chunk(bytes: number): void;
  /**
   * Once: `true` when the last chunk was handed over and the stream closed,
   * `false` when its reader cancelled it or its source failed.
   */
  end(complete: boolean): void;
}

/**
 * The streams made by {@link meteredStream}, each with the function that
 * attaches a meter to it; an entry goes with its stream.
 */
const attachers = new WeakMap<ReadableStream<Uint8Array>, (meter: Meter) => boolean>();

/**
 * A byte stream from `source` (pulled one chunk at a time, high-water mark 0)
 * that counts itself: the source calls `meter.chunk(n)` just before it
 * enqueues `n` bytes, and `meter.end(…)` when it closes, fails or is
 * cancelled; those reach whoever attached with {@link attachMeter}.
 */
export function meteredStream(
  source: (meter: Meter) => UnderlyingDefaultSource<Uint8Array>,
): ReadableStream<Uint8Array> {
  let attached: Meter | undefined;
  let started = false;
  let ended = false;
  const meter: Meter = {
    chunk(bytes) {
      started = true;
      attached?.chunk(bytes);
    },
    end(complete) {
      if (ended) return;
      ended = true;
      attached?.end(complete);
    },
  };
  const stream = new ReadableStream<Uint8Array>(source(meter), { highWaterMark: 0 });
  attachers.set(stream, (next) => {
    // One meter, attached before the first chunk: it counts every byte.
    if (attached !== undefined || started || ended || stream.locked) return false;
    attached = next;
    return true;
  });
  return stream;
}

/**
 * Attaches `meter` to `stream` when it is a metered stream not yet read or
 * metered; false otherwise (count it some other way).
 */
export function attachMeter(stream: ReadableStream<Uint8Array>, meter: Meter): boolean {
  return attachers.get(stream)?.(meter) ?? false;
}
