/**
 * Uploads to the `s3` backend: the bytes stream into a multipart upload
 * (`PartUploader`) while SHA-256 and size are computed on the way. Memory is
 * bounded by the part buffers: at most (UPLOAD_QUEUE + 1) parts of `partSize`
 * bytes (8 MiB unless APP_MAX_UPLOAD_BYTES needs larger parts to stay within
 * 10,000 parts), so 24 MiB per upload. More than `maxBytes` fails the stream at
 * once; any failure aborts the multipart upload, so no object appears and no
 * part is kept. The object exists only once CompleteMultipartUpload succeeded,
 * and only then does the caller record the release. Uploads cut by a crash are
 * removed by `sweep` (sweep.ts).
 */
import { createHash } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { type ByteSource, type StoredArtifact, UploadTooLargeError } from "./types.ts";

const MiB = 1024 * 1024;
const MIN_PART_BYTES = 8 * MiB;
/** S3 allows at most this many parts in one multipart upload. */
const MAX_PARTS = 10_000;
/** Parts uploaded at the same time by one upload. */
const UPLOAD_QUEUE = 2;

/** The part size that fits an upload of `maxUploadBytes` in S3's 10,000 parts (at least 8 MiB). */
export function partSizeFor(maxUploadBytes: number): number {
  return Math.max(MIN_PART_BYTES, Math.ceil(maxUploadBytes / MAX_PARTS));
}

/**
 * The upload's chunks, counted and hashed as they pass; fails with
 * `UploadTooLargeError` as soon as they pass `maxBytes`. A chunk is valid only
 * until the next is asked for (the multipart reader reuses its buffer).
 */
export function countedChunks(source: ByteSource, maxBytes: number) {
  const iterator = (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const hash = createHash("sha256");
  const hash512 = createHash("sha512");
  let size = 0;
  let done = false;
  return {
    async next(): Promise<Uint8Array | null> {
      while (true) {
        const step = await iterator.next();
        if (step.done) {
          done = true;
          return null;
        }
        if (step.value.byteLength === 0) continue;
        size += step.value.byteLength;
        if (size > maxBytes) throw new UploadTooLargeError(maxBytes);
        hash.update(step.value);
        hash512.update(step.value);
        return step.value;
      }
    },
    /** Stops the source (the client's request body) after a failure. */
    async cancel(): Promise<void> {
      if (!done) await iterator.return?.().catch(() => {});
    },
    result: () => ({
      checksum_sha256: hash.digest("hex"),
      checksum_sha512: hash512.digest("base64"),
      size_bytes: size,
    }),
  };
}

type CountedChunks = ReturnType<typeof countedChunks>;

/**
 * Streams chunks into one object through the SDK's multipart calls, with a
 * fixed pool of part buffers: each chunk is copied once, into the part being
 * filled, while up to UPLOAD_QUEUE full parts are being sent. A part buffer is
 * reused once its UploadPart has answered, so an upload holds at most
 * (UPLOAD_QUEUE + 1) × partSize bytes, however large it is and without
 * garbage for the collector. Less than one part is sent with one PutObject.
 * On any failure the multipart upload is aborted and the source cancelled.
 */
export class PartUploader {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly partSize: number,
  ) {}

  /** SHA-256 and size of what was stored, or null (nothing stored) when the source was empty. */
  async upload(
    key: string,
    chunks: CountedChunks,
  ): Promise<Omit<StoredArtifact, "storage_key"> | null> {
    const { client, bucket, partSize } = this;
    const free: Uint8Array[] = [];
    let part: Uint8Array = new Uint8Array(partSize);
    let filled = 0;
    let nextPart = 1;
    let uploadId: string | undefined;
    const sent: Array<{ PartNumber: number; ETag: string }> = [];
    const inFlight: Array<Promise<void>> = [];
    let sendError: unknown;

    const sendPart = async (bytes: Uint8Array, buffer: Uint8Array, partNumber: number) => {
      try {
        const answer = await client.send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: partNumber,
            Body: bytes,
          }),
        );
        sent.push({ PartNumber: partNumber, ETag: answer.ETag! });
      } catch (error) {
        sendError ??= error;
      } finally {
        free.push(buffer);
      }
    };

    try {
      while (true) {
        const chunk = await chunks.next();
        if (chunk === null) break;
        let offset = 0;
        while (offset < chunk.byteLength) {
          const take = Math.min(chunk.byteLength - offset, partSize - filled);
          part.set(chunk.subarray(offset, offset + take), filled);
          filled += take;
          offset += take;
          if (filled < partSize) continue;
          if (sendError !== undefined) throw sendError;
          uploadId ??= (await client.send(
            new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }),
          )).UploadId;
          const sending = sendPart(part, part, nextPart++);
          inFlight.push(sending);
          sending.then(() => inFlight.splice(inFlight.indexOf(sending), 1));
          if (inFlight.length >= UPLOAD_QUEUE) await Promise.race(inFlight);
          part = free.pop() ?? new Uint8Array(partSize);
          filled = 0;
        }
      }
      if (uploadId === undefined) {
        if (filled === 0) return null;
        await client.send(
          new PutObjectCommand({ Bucket: bucket, Key: key, Body: part.subarray(0, filled) }),
        );
        return chunks.result();
      }
      if (filled > 0) {
        await sendPart(part.subarray(0, filled), part, nextPart++);
      }
      await Promise.all(inFlight);
      if (sendError !== undefined) throw sendError;
      sent.sort((a, b) => a.PartNumber - b.PartNumber);
      await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: sent },
        }),
      );
      return chunks.result();
    } catch (error) {
      await chunks.cancel();
      await Promise.all(inFlight);
      if (uploadId !== undefined) {
        // Best effort: what an abort cannot remove, the sweep does.
        await client.send(
          new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }),
        ).catch(() => {});
      }
      throw error;
    }
  }
}
