/** The bucket itself: the start-up check that it can be written, and listing what it holds. */
import {
  DeleteObjectCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import type { S3Config } from "../lib/config.ts";
import { STORAGE_KEY_PATTERN } from "../lib/limits.ts";
import { describe } from "./s3_errors.ts";
import { StorageUnavailableError } from "./unavailable.ts";

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

type BucketPlace = Pick<S3Config, "bucket" | "prefix">;

/**
 * Checks that the bucket answers and can be written (a probe object is put
 * and deleted). Throws `StorageUnavailableError` with one line otherwise.
 */
export async function checkBucket(client: S3Client, settings: S3Config): Promise<void> {
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

/** Every artifact object under the prefix. */
export async function* listObjects(
  client: S3Client,
  { bucket, prefix }: BucketPlace,
): AsyncGenerator<BucketEntry> {
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
}

/** Every unfinished multipart upload under the prefix. */
export async function* listUploads(
  client: S3Client,
  { bucket, prefix }: BucketPlace,
): AsyncGenerator<BucketEntry> {
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
}

/** The first object under the prefix (any object, artifact or not), as an `s3://` URL, or null. */
export async function findAnyObject(client: S3Client, { bucket, prefix }: BucketPlace) {
  const page = await client.send(
    new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: 1 }),
  );
  const key = page.Contents?.[0]?.Key;
  return key === undefined ? null : `s3://${bucket}/${key}`;
}
