/**
 * Several byte spans of one artifact, back to back in one stream, in the
 * order given (a multi-range download). Spans that follow each other in the
 * file with small gaps are read in one backend read and the gaps dropped, so
 * that electron-updater's up to 1,000 ascending ranges cost a few reads of
 * the store (each an S3 GET), not one each; overlapping or reversed spans are
 * read on their own.
 */

/** `length` bytes from `start`. */
export interface Span {
  start: number;
  length: number;
}

/** The most bytes between two spans that are read and dropped rather than read apart. */
const SPAN_GAP_BYTES = 256 * 1024;

/** One backend read: the bytes from `start` to `end` (exclusive), and the spans inside them. */
interface SpanRead {
  start: number;
  end: number;
  spans: Span[];
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

export interface SpanSource {
  /** `length` bytes from `start`, as the backend reads them (each stream is read to its end). */
  read(start: number, length: number): Promise<ReadableStream<Uint8Array>>;
  /** Called once at the end, on cancel or on error. */
  close(): void;
}

/** The bytes of `spans`, back to back, read through `source`. */
export function spansStream(spans: Span[], source: SpanSource): ReadableStream<Uint8Array> {
  return ReadableStream.from(spanBytes(groupSpans(spans), source));
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
