/**
 * Several byte spans of one artifact, back to back in one stream, in the
 * order given (a multi-range download). Spans that follow each other in the
 * file with small gaps are read in one backend read and the gaps dropped, so
 * that electron-updater's up to 1,000 ascending ranges cost a few reads of
 * the store, not one each.
 *
 * A backend whose reads cost a request each (s3: a GET) plans with
 * {@link SpanBounds}: at most `maxReads` reads a request. Past that in the
 * order asked, the spans are sorted and merged into at most `maxReads` reads
 * of the file (the closest ones joined first; their bytes never add up to
 * more than the file's size), each read once: ascending spans stream from
 * them as they come; others (descending, overlapping, interleaved) are held
 * until the last read when their bytes add up to at most `bufferBytes`, and
 * are otherwise not served as ranges at all (null: the caller sends the whole
 * file).
 */

/** `length` bytes from `start`. */
export interface Span {
  start: number;
  length: number;
}

/** The most bytes between two spans that are read and dropped rather than read apart. */
const SPAN_GAP_BYTES = 256 * 1024;

/** The reads a backend whose reads are requests allows one multi-range answer. */
export interface SpanBounds {
  /** The most backend reads. */
  maxReads: number;
  /** The most bytes held to answer spans out of file order. */
  bufferBytes: number;
}

/** One backend read: the bytes from `start` to `end` (exclusive), and the spans inside them. */
export interface SpanRead {
  start: number;
  end: number;
  spans: Span[];
}

/**
 * How spans are read: `streamed`, each read's spans come in the order given,
 * ascending and apart; `held`, the spans' bytes are gathered from every read
 * and sent after the last.
 */
export interface SpanPlan {
  reads: SpanRead[];
  held: boolean;
}

/** The reads that cover `spans`, in order: a span joins the previous read when it follows it closely. */
export function groupSpans(spans: Span[], gapBytes = SPAN_GAP_BYTES): SpanRead[] {
  const reads: SpanRead[] = [];
  for (const span of spans) {
    const last = reads.at(-1);
    if (last !== undefined && span.start >= last.end && span.start - last.end <= gapBytes) {
      last.spans.push(span);
      last.end = span.start + span.length;
    } else {
      reads.push({ start: span.start, end: span.start + span.length, spans: [span] });
    }
  }
  return reads;
}

/**
 * The reads of `spans`, within `bounds` when given (see the top of this
 * file); null when they cannot be kept within them.
 */
export function planSpans(spans: Span[], bounds?: SpanBounds): SpanPlan | null {
  const inOrder = groupSpans(spans);
  if (bounds === undefined || inOrder.length <= bounds.maxReads) {
    return { reads: inOrder, held: false };
  }
  const regions = mergedRegions(spans, bounds.maxReads);
  const ascending = spans.every((span, i) =>
    i === 0 || span.start >= spans[i - 1].start + spans[i - 1].length
  );
  if (ascending) {
    // Each span lies in one region, and they come region after region.
    let index = 0;
    const reads = regions.map((region) => {
      const read: SpanRead = { ...region, spans: [] };
      while (index < spans.length && spans[index].start < region.end) {
        read.spans.push(spans[index++]);
      }
      return read;
    });
    return { reads, held: false };
  }
  const held = spans.reduce((sum, span) => sum + span.length, 0);
  if (held > bounds.bufferBytes) return null;
  const reads = regions.map((region) => ({
    ...region,
    spans: spans.filter((span) => span.start >= region.start && span.start < region.end),
  }));
  return { reads, held: true };
}

/** The spans' bytes as at most `maxReads` ranges of the file, ascending, the closest merged first. */
function mergedRegions(spans: Span[], maxReads: number): { start: number; end: number }[] {
  const sorted = [...spans].sort((a, b) => a.start - b.start);
  const regions: { start: number; end: number }[] = [];
  for (const span of sorted) {
    const last = regions.at(-1);
    const end = span.start + span.length;
    if (last !== undefined && span.start <= last.end + SPAN_GAP_BYTES) {
      last.end = Math.max(last.end, end);
    } else regions.push({ start: span.start, end });
  }
  if (regions.length <= maxReads) return regions;
  // Join across the widest gaps last: keep the `maxReads - 1` widest as the places to split.
  const gaps = regions.slice(1).map((region, i) => ({
    at: i + 1,
    width: region.start - regions[i].end,
  }));
  const splits = new Set(
    gaps.sort((a, b) => b.width - a.width || a.at - b.at).slice(0, maxReads - 1).map((g) => g.at),
  );
  const merged: { start: number; end: number }[] = [];
  regions.forEach((region, i) => {
    if (i === 0 || splits.has(i)) merged.push({ ...region });
    else merged[merged.length - 1].end = region.end;
  });
  return merged;
}

export interface SpanSource {
  /** `length` bytes from `start`, as the backend reads them (each stream is read to its end). */
  read(start: number, length: number): Promise<ReadableStream<Uint8Array>>;
  /** Called once at the end, on cancel or on error. */
  close(): void;
}

/** The bytes of the planned spans, back to back in the order given, read through `source`. */
export function spansStream(
  plan: SpanPlan,
  spans: Span[],
  source: SpanSource,
): ReadableStream<Uint8Array> {
  return ReadableStream.from(
    plan.held ? heldBytes(plan.reads, spans, source) : spanBytes(plan.reads, source),
  );
}

async function* spanBytes(reads: SpanRead[], source: SpanSource): AsyncGenerator<Uint8Array> {
  try {
    for (const read of reads) {
      const stream = await source.read(read.start, read.end - read.start);
      let at = read.start; // the file offset of the chunk's first byte
      let index = 0;
      for await (const chunk of stream) {
        let offset = 0;
        while (offset < chunk.byteLength && index < read.spans.length) {
          const span = read.spans[index];
          const spanEnd = span.start + span.length;
          const position = at + offset;
          if (position < span.start) {
            offset += Math.min(span.start - position, chunk.byteLength - offset);
            continue;
          }
          const take = Math.min(spanEnd - position, chunk.byteLength - offset);
          yield chunk.subarray(offset, offset + take);
          offset += take;
          if (position + take === spanEnd) index++;
        }
        at += chunk.byteLength;
      }
    }
  } finally {
    source.close();
  }
}

/** Every read once, each span's bytes copied out of it; then the spans in the order given. */
async function* heldBytes(
  reads: SpanRead[],
  spans: Span[],
  source: SpanSource,
): AsyncGenerator<Uint8Array> {
  try {
    const held = new Map<Span, Uint8Array>(
      spans.map((span) => [span, new Uint8Array(span.length)]),
    );
    for (const read of reads) {
      const stream = await source.read(read.start, read.end - read.start);
      let at = read.start;
      for await (const chunk of stream) {
        const chunkEnd = at + chunk.byteLength;
        for (const span of read.spans) {
          const from = Math.max(at, span.start);
          const to = Math.min(chunkEnd, span.start + span.length);
          if (from < to) held.get(span)!.set(chunk.subarray(from - at, to - at), from - span.start);
        }
        at = chunkEnd;
      }
    }
    for (const span of spans) yield held.get(span)!;
  } finally {
    source.close();
  }
}
