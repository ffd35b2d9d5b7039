/** Reading a stored object: ranges through fetch, never a short body, failing when the store stalls. */
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { OpenedArtifact } from "./types.ts";
import { planSpans, type SpanBounds, spansStream } from "./spans.ts";
import { StorageUnavailableError } from "./unavailable.ts";

/**
 * The GETs one multi-range answer may make of the bucket, and the bytes it may
 * hold to answer ranges out of file order (src/storage/spans.ts); past them the
 * whole file is sent.
 */
export const S3_SPAN_BOUNDS: SpanBounds = { maxReads: 16, bufferBytes: 8 * 1024 * 1024 };

/** A stored object for reading: its bytes come through fetch, bounded as the store's calls are. */
export function openedObject(
  client: S3Client,
  { bucket, key, size, etag, idleMs, stalled }: {
    bucket: string;
    key: string;
    size: number;
    /** The store's own ETag of the object (a resume may send it in If-Range). */
    etag: string | undefined;
    /** The longest wait for the next bytes of the body before it fails. */
    idleMs: number;
    stalled: () => void;
  },
): OpenedArtifact {
  return {
    size,
    // Objects are never rewritten, so the store's ETag names the same bytes as ours.
    storeEtag: etag?.startsWith('"') ? etag : undefined,
    async read(start, length) {
      if (length === 0) return ReadableStream.from<Uint8Array>([]);
      const got = await client.send(
        new GetObjectCommand({
          Bucket: bucket,
          Key: key,
          Range: `bytes=${start}-${start + length - 1}`,
        }),
      );
      const body = got.Body?.transformToWebStream() as ReadableStream<Uint8Array> | undefined;
      if (body === undefined) throw new Error(`object ${key} has no body`);
      return exactLength(body, { length, idleMs, stalled });
    },
    readSpans(spans) {
      const plan = planSpans(spans, S3_SPAN_BOUNDS);
      if (plan === null) return null;
      return spansStream(plan, spans, {
        read: (start, length) => this.read(start, length),
        close() {},
      });
    },
    close() {},
  };
}

/**
 * Passes `body` on and fails it if it ends before `length` bytes (never a
 * short body passed off as whole) or if the store sends nothing for `idleMs`
 * while more is asked for (a slow client, which asks for nothing, is not idle
 * storage). One timer per body, not per chunk.
 */
function exactLength(
  body: ReadableStream<Uint8Array>,
  { length, idleMs, stalled }: { length: number; idleMs: number; stalled: () => void },
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let seen = 0;
  let waitingSince = 0;
  let timer: ReturnType<typeof setInterval> | undefined;
  const stop = () => clearInterval(timer);
  return new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => {
        if (waitingSince === 0 || Date.now() - waitingSince < idleMs) return;
        stop();
        stalled();
        const error = new StorageUnavailableError(`the storage sent nothing for ${idleMs} ms`);
        controller.error(error);
        reader.cancel(error).catch(() => {});
      }, Math.min(1000, Math.max(10, idleMs / 4)));
    },
    async pull(controller) {
      waitingSince = Date.now();
      try {
        const { done, value } = await reader.read();
        waitingSince = 0;
        if (done) {
          stop();
          if (seen !== length) {
            controller.error(new Error(`artifact ended ${length - seen} bytes early`));
          } else controller.close();
          return;
        }
        seen += value.byteLength;
        controller.enqueue(value);
      } catch (error) {
        stop();
        try {
          controller.error(error);
        } catch { /* already failed by the idle timer */ }
      }
    },
    cancel(reason) {
      stop();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 1 });
}
