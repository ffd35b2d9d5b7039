/**
 * The `s3` backend: artifacts as objects in one bucket of any S3-compatible
 * store (AWS S3, MinIO, Ceph RGW, R2), through the AWS SDK. This module puts
 * the pieces together: the SDK clients (s3_client.ts), the bucket check and
 * listings (s3_bucket.ts), the bucket's health (s3_health.ts), reads
 * (s3_read.ts) and streamed uploads (s3_upload.ts).
 */
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { S3Config } from "../lib/config.ts";
import { STORAGE_KEY_PATTERN } from "../lib/limits.ts";
import {
  type BucketEntry,
  checkBucket,
  findAnyObject,
  listObjects,
  listUploads,
} from "./s3_bucket.ts";
import { s3Clients } from "./s3_client.ts";
import { isNotFound } from "./s3_errors.ts";
import { trackHealth } from "./s3_health.ts";
import { openedObject } from "./s3_read.ts";
import { countedChunks, partSizeFor, PartUploader } from "./s3_upload.ts";
import {
  type ArtifactStore,
  type ByteSource,
  EmptyUploadError,
  type PresignOptions,
  type StoredArtifact,
  type Sweepable,
} from "./types.ts";

/** How often the storage sweep runs (sweep.ts). */
const SWEEP_EVERY_MS = 60 * 60_000;
/** The most a health probe (one HeadBucket, no retry) waits. */
const HEALTH_PROBE_MS = 2_000;

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
  const timeoutMs = settings.timeoutSeconds * 1000;
  const { client, reader } = s3Clients(settings);
  const { bucket, prefix } = settings;
  const health = trackHealth(`bucket "${bucket}"`, onStateChange);
  for (const sdk of [client, reader]) health.watch(sdk);
  const objectKey = (storageKey: string) => `${prefix}${storageKey}`;
  const uploader = new PartUploader(client, bucket, partSizeFor(maxUploadBytes));

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
    listObjects: () => listObjects(client, settings),
    listUploads: () => listUploads(client, settings),
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
    findAny: () => findAnyObject(client, settings),
  };
  return store;
}
