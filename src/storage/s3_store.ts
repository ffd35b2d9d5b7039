/**
 * The `s3` backend: artifacts as objects in one bucket of any S3-compatible
 * store (AWS S3, MinIO, Ceph RGW, R2), through the AWS SDK (see
 * docs/operators.md for why this client).
 *
 * Uploads stream into a multipart upload (`PartUploader`) while SHA-256
 * and size are computed on the way. Memory is bounded by the part buffers:
 * at most (UPLOAD_QUEUE + 1) parts of `partSize` bytes (8 MiB unless
 * APP_MAX_UPLOAD_BYTES needs larger parts to stay within 10,000 parts), so
 * 24 MiB per upload. More than `maxBytes` fails the stream at once; any
 * failure aborts the multipart upload, so no object appears and no part is
 * kept. The object exists only once CompleteMultipartUpload succeeded, and only
 * then does the caller record the release. Uploads cut by a crash are removed
 * by `sweep` (sweep.ts).
 */
import { createHash } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { FetchHttpHandler } from "@smithy/fetch-http-handler";
import type { S3Config } from "../lib/config.ts";
import { STORAGE_KEY_PATTERN } from "../lib/limits.ts";
import { StorageUnavailableError } from "./unavailable.ts";
import { spansStream } from "./spans.ts";
import {
  type ArtifactStore,
  type ByteSource,
  EmptyUploadError,
  type OpenedArtifact,
  type PresignOptions,
  type StoredArtifact,
  type Sweepable,
  UploadTooLargeError,
} from "./types.ts";

const MiB = 1024 * 1024;
const MIN_PART_BYTES = 8 * MiB;
/** S3 allows at most this many parts in one multipart upload. */
const MAX_PARTS = 10_000;
/** How often the storage sweep runs (sweep.ts). */
const SWEEP_EVERY_MS = 60 * 60_000;
/** Parts uploaded at the same time by one upload. */
const UPLOAD_QUEUE = 2;
/** How long a known storage state counts before `checkHealth` asks the bucket again. */
const HEALTH_FRESH_MS = 5_000;
/** The most a health probe (one HeadBucket, no retry) waits. */
const HEALTH_PROBE_MS = 2_000;

/** An object or an unfinished multipart upload found in the bucket. */
export interface BucketEntry {
  storageKey: string;
  /** Object size; 0 for an unfinished upload. */
  size: number;
  /** Last modified (object) or initiated (multipart upload). */
  at: Date;
  /** Set for an unfinished multipart upload. */
  uploadId?: string;
}

export interface S3ArtifactStore extends ArtifactStore {
  readonly kind: "s3";
  readonly settings: S3Config;
  readonly sweeping: Sweepable;
  /** A GET URL valid for `ttlSeconds` that answers with the given Content-Disposition. */
  presignGet(storageKey: string, options: PresignOptions): Promise<string>;
  /** Every artifact object under the prefix. */
  listObjects(): AsyncIterable<BucketEntry>;
  /** Every unfinished multipart upload under the prefix. */
  listUploads(): AsyncIterable<BucketEntry>;
  abortUpload(storageKey: string, uploadId: string): Promise<void>;
  /**
   * Whether the bucket answers: what the last S3 call showed if it is recent,
   * else one HeadBucket of at most 2 s (one at a time, however many ask).
   */
  checkHealth(): Promise<boolean>;
}

function clientConfig(settings: S3Config): S3ClientConfig {
  const timeoutMs = settings.timeoutSeconds * 1000;
  return {
    // Bounded waits (the SDK waits forever by default): connecting, and a
    // connection on which nothing moves. A call that times out is retried
    // (maxAttempts) and then fails with StorageUnavailableError.
    requestHandler: { connectionTimeout: timeoutMs, socketTimeout: timeoutMs },
    endpoint: settings.endpoint,
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    credentials: settings.accessKeyId === undefined ? undefined : {
      accessKeyId: settings.accessKeyId,
      secretAccessKey: settings.secretAccessKey!,
    },
    // Only the checksums S3 itself requires: many S3-compatible stores do
    // not know the newer flexible checksums, and the SHA-256 is ours anyway.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // Given here, so the SDK does not look for them in ~/.aws (which the
    // service may not read): only APP_S3_* settings count.
    maxAttempts: 3,
    retryMode: "standard",
    defaultsMode: "standard",
    useFipsEndpoint: false,
    useDualstackEndpoint: false,
    disableS3ExpressSessionAuth: true,
    useArnRegion: false,
    authSchemePreference: [],
    defaultUserAgentProvider: () => Promise.resolve([["update-distribution-service"]]),
  };
}

/**
 * Opens the bucket and checks that it can be written (a probe object is put
 * and deleted). Throws `StorageUnavailableError` with one line otherwise.
 */
export async function createS3Store(
  settings: S3Config,
  maxUploadBytes: number,
  /** Told when the bucket stops or starts answering (the `uds_storage_up` metric). */
  onStateChange: (up: boolean) => void = () => {},
): Promise<S3ArtifactStore> {
  // Two clients: uploads and bucket calls through the SDK's default (node:http)
  // handler, which keeps upload memory lowest; object reads through fetch,
  // which streams GET bodies about twice as fast under Deno.
  const timeoutMs = settings.timeoutSeconds * 1000;
  const client = new S3Client(clientConfig(settings));
  const reader = new S3Client({
    ...clientConfig(settings),
    // Up to the answer's headers (connecting included); the body has its own
    // idle bound (openedObject).
    requestHandler: new FetchHttpHandler({ requestTimeout: timeoutMs }),
  });
  const { bucket, prefix } = settings;
  const health = trackHealth(`bucket "${bucket}"`, onStateChange);
  for (const sdk of [client, reader]) health.watch(sdk);
  const objectKey = (storageKey: string) => `${prefix}${storageKey}`;
  const partSize = Math.max(MIN_PART_BYTES, Math.ceil(maxUploadBytes / MAX_PARTS));
  const uploader = new PartUploader(client, bucket, partSize);

  await checkBucket(client, settings);

  /** Uploads `source` (at most `maxBytes`) as the object of `storageKey`; nothing stored when empty. */
  const uploadAs = async (storageKey: string, source: ByteSource, maxBytes: number) => {
    const stored = await uploader.upload(objectKey(storageKey), countedChunks(source, maxBytes));
    if (stored === null) throw new EmptyUploadError();
    return stored;
  };

  const store: S3ArtifactStore = {
    kind: "s3",
    settings,
    async save(source, maxBytes) {
      const storageKey = crypto.randomUUID();
      const stored = await uploadAs(storageKey, source, maxBytes);
      return { storage_key: storageKey, ...stored } satisfies StoredArtifact;
    },
    async open(storageKey) {
      if (!STORAGE_KEY_PATTERN.test(storageKey)) return null;
      try {
        const head = await reader.send(
          new HeadObjectCommand({ Bucket: bucket, Key: objectKey(storageKey) }),
        );
        return openedObject(reader, {
          bucket,
          key: objectKey(storageKey),
          size: head.ContentLength ?? 0,
          etag: head.ETag,
          idleMs: timeoutMs,
          stalled: health.down,
        });
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    async remove(storageKey) {
      if (!STORAGE_KEY_PATTERN.test(storageKey)) return;
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(storageKey) }));
    },
    presignGet(storageKey, { contentDisposition, contentType, ttlSeconds }) {
      return getSignedUrl(
        reader,
        new GetObjectCommand({
          Bucket: bucket,
          Key: objectKey(storageKey),
          ResponseContentDisposition: contentDisposition,
          ResponseContentType: contentType,
        }),
        { expiresIn: ttlSeconds },
      );
    },
    async *listObjects() {
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
        );
        for (const object of page.Contents ?? []) {
          const storageKey = object.Key?.slice(prefix.length) ?? "";
          if (!STORAGE_KEY_PATTERN.test(storageKey)) continue;
          yield { storageKey, size: object.Size ?? 0, at: object.LastModified ?? new Date(0) };
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    },
    async *listUploads() {
      let keyMarker: string | undefined;
      let uploadIdMarker: string | undefined;
      do {
        const page = await client.send(
          new ListMultipartUploadsCommand({
            Bucket: bucket,
            Prefix: prefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        );
        for (const upload of page.Uploads ?? []) {
          const storageKey = upload.Key?.slice(prefix.length) ?? "";
          if (!STORAGE_KEY_PATTERN.test(storageKey) || upload.UploadId === undefined) continue;
          yield {
            storageKey,
            size: 0,
            at: upload.Initiated ?? new Date(0),
            uploadId: upload.UploadId,
          };
        }
        const more = page.IsTruncated === true;
        keyMarker = more ? page.NextKeyMarker : undefined;
        uploadIdMarker = more ? page.NextUploadIdMarker : undefined;
      } while (keyMarker !== undefined);
    },
    async abortUpload(storageKey, uploadId) {
      await client.send(
        new AbortMultipartUploadCommand({
          Bucket: bucket,
          Key: objectKey(storageKey),
          UploadId: uploadId,
        }),
      );
    },
    async put(storageKey, source) {
      if (!STORAGE_KEY_PATTERN.test(storageKey)) throw new Error(`bad storage key ${storageKey}`);
      if (await store.open(storageKey) !== null) {
        throw new Error(`${store.where(storageKey)} already exists`);
      }
      return await uploadAs(storageKey, source, Number.MAX_SAFE_INTEGER);
    },
    sweeping: {
      afterMs: settings.sweepAfterSeconds * 1000,
      everyMs: SWEEP_EVERY_MS,
      async removeAbandonedUploads() {
        // Initiated before the cutoff: never an upload still running on another instance.
        const cutoff = Date.now() - settings.sweepAfterSeconds * 1000;
        let aborted = 0;
        for await (const upload of store.listUploads()) {
          if (upload.at.getTime() >= cutoff) continue;
          await store.abortUpload(upload.storageKey, upload.uploadId!);
          aborted++;
        }
        return aborted;
      },
      listArtifacts: () => store.listObjects(),
      // Objects carry no lock: the age (APP_S3_SWEEP_AFTER_SECONDS) alone protects live uploads.
      claim: () => Promise.resolve({ release() {} }),
    },
    where: (storageKey) => `s3://${bucket}/${objectKey(storageKey)}`,
    checkHealth: () =>
      health.check(() =>
        reader.send(new HeadBucketCommand({ Bucket: bucket }), {
          abortSignal: AbortSignal.timeout(HEALTH_PROBE_MS),
        })
      ),
    async findAny() {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: 1 }),
      );
      const key = page.Contents?.[0]?.Key;
      return key === undefined ? null : `s3://${bucket}/${key}`;
    },
  };
  return store;
}

async function checkBucket(client: S3Client, settings: S3Config): Promise<void> {
  const where = `bucket "${settings.bucket}"${
    settings.endpoint ? ` at ${settings.endpoint}` : ` in AWS ${settings.region}`
  }`;
  try {
    await client.send(new HeadBucketCommand({ Bucket: settings.bucket }));
  } catch (error) {
    throw new StorageUnavailableError(`cannot reach ${where}: ${describe(error)}`);
  }
  const probe = `${settings.prefix}.write-check-${crypto.randomUUID()}`;
  try {
    await client.send(new PutObjectCommand({ Bucket: settings.bucket, Key: probe, Body: "ok" }));
    await client.send(new DeleteObjectCommand({ Bucket: settings.bucket, Key: probe }));
  } catch (error) {
    throw new StorageUnavailableError(`cannot write to ${where}: ${describe(error)}`);
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const name = error.name !== "Error" ? error.name : "";
  const text = [status && `HTTP ${status}`, name, error.message !== name && error.message]
    .filter(Boolean).join(" ");
  return text.replace(/\s+/g, " ").slice(0, 300) || "unknown error";
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NotFound" || e?.name === "NoSuchKey" || e?.$metadata?.httpStatusCode === 404;
}

/** Network error codes of a store that does not answer (node:http and fetch). */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * Whether an S3 call failed because the store did not answer (a timeout, a
 * refused or cut connection, a 5xx) rather than with an answer (404, 403).
 */
function isUnavailable(error: unknown): boolean {
  if (error instanceof StorageUnavailableError) return true;
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return true;
  if (typeof e?.code === "string" && UNREACHABLE_CODES.has(e.code)) return true;
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  // fetch: "error sending request", "connection closed before message completed", …
  return error instanceof TypeError && /request|connect|network/i.test(error.message);
}

/**
 * The bucket's state as the S3 calls find it: every call of a watched client
 * that gets an answer marks it up, every call that gets none (after the SDK's
 * retries) marks it down and fails with StorageUnavailableError, which the
 * API answers with 503. Shown by /healthz (`checkHealth`) and the
 * `uds_storage_up` metric.
 */
function trackHealth(where: string, onStateChange: (up: boolean) => void) {
  let up = true;
  let at = Date.now();
  let probe: Promise<boolean> | undefined;
  const mark = (state: boolean) => {
    if (state !== up) onStateChange(state);
    up = state;
    at = Date.now();
  };
  return {
    /** Marks the bucket down: a read stalled (openedObject). */
    down: () => mark(false),
    watch(sdk: S3Client) {
      sdk.middlewareStack.add(
        (next) => async (args) => {
          try {
            const result = await next(args);
            mark(true);
            return result;
          } catch (error) {
            if (!isUnavailable(error)) {
              mark(true);
              throw error;
            }
            mark(false);
            if (error instanceof StorageUnavailableError) throw error;
            throw new StorageUnavailableError(`${where} did not answer: ${describe(error)}`);
          }
        },
        { step: "initialize", name: "udsStorageHealth", priority: "high" },
      );
    },
    async check(ask: () => Promise<unknown>): Promise<boolean> {
      if (Date.now() - at < HEALTH_FRESH_MS) return up;
      probe ??= ask().then(() => true, (error) => !isUnavailable(error))
        .finally(() => probe = undefined);
      return await probe;
    },
  };
}

/** A stored object for reading: its bytes come through fetch, bounded as the store's calls are. */
function openedObject(
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
      return spansStream(spans, { read: (start, length) => this.read(start, length), close() {} });
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

/**
 * The upload's chunks, counted and hashed as they pass; fails with
 * `UploadTooLargeError` as soon as they pass `maxBytes`. A chunk is valid only
 * until the next is asked for (the multipart reader reuses its buffer).
 */
function countedChunks(source: ByteSource, maxBytes: number) {
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
class PartUploader {
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
