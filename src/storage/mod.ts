/** Artifact storage: one interface, the `fs` and `s3` backends behind it. */
import { makePrivateDir } from "../lib/private_files.ts";
import type { Config } from "../lib/config.ts";
import { createFsStore, type FsArtifactStore } from "./fs_store.ts";
import type { S3ArtifactStore } from "./s3_store.ts";

export * from "./types.ts";
export { createFsStore, type FsArtifactStore, type FsStoreOptions } from "./fs_store.ts";
export { StorageUnavailableError } from "./unavailable.ts";
export { storageHealth } from "./health.ts";
// Types only: the S3 client is loaded when APP_STORAGE=s3 asks for it.
export type { S3ArtifactStore } from "./s3_store.ts";
export type { BucketEntry } from "./s3_bucket.ts";
export { type PublishInput, publishRelease } from "./publish.ts";
export {
  type ReceivedFile,
  receiveUpload,
  type RecordedUpload,
  recordUpload,
  type UploadRecord,
  type UploadRollout,
} from "./upload.ts";
export { scheduleSweeps, type SweepResult, sweepStore } from "./sweep.ts";

/**
 * The backend `APP_STORAGE` names. For `s3` the bucket is checked first (it
 * must exist and take a write), so a wrong setting stops start-up at once.
 */
export async function openArtifactStore(
  config: Config,
  /** Told when the storage stops or starts answering (s3; the metrics show it). */
  onStateChange?: (up: boolean) => void,
): Promise<FsArtifactStore | S3ArtifactStore> {
  if (config.storage === "s3") {
    // Loaded only here: with fs, the S3 client costs neither start-up time nor memory.
    const { createS3Store } = await import("./s3_store.ts");
    return await createS3Store(config.s3!, config.maxUploadBytes, onStateChange);
  }
  await makePrivateDir(config.artifactsDir);
  return createFsStore(config.artifactsDir, {
    sweepAfterMs: config.fsSweepAfterSeconds * 1000,
  });
}
