/**
 * Removes what a crash left in the bucket (kill -9, power loss): multipart
 * uploads that were never completed or aborted, and objects that no release
 * points at (a crash between CompleteMultipartUpload and the release commit).
 * Only what is older than APP_S3_SWEEP_AFTER_SECONDS is touched, so uploads
 * still running on another instance are safe. Runs at start and every hour.
 */
import { listStorageKeys } from "../store/mod.ts";
import type { S3ArtifactStore } from "./s3_store.ts";

export interface SweepResult {
  abortedUploads: number;
  removedObjects: number;
}

export async function sweepBucket(kv: Deno.Kv, store: S3ArtifactStore): Promise<SweepResult> {
  const cutoff = Date.now() - store.settings.sweepAfterSeconds * 1000;
  const result: SweepResult = { abortedUploads: 0, removedObjects: 0 };
  for await (const upload of store.listUploads()) {
    if (upload.at.getTime() >= cutoff) continue;
    await store.abortUpload(upload.storageKey, upload.uploadId!);
    result.abortedUploads++;
  }
  const old: string[] = [];
  for await (const object of store.listObjects()) {
    if (object.at.getTime() < cutoff) old.push(object.storageKey);
  }
  // Read after listing: a release committed for a listed object is seen here.
  const referenced = await listStorageKeys(kv);
  for (const storageKey of old) {
    if (referenced.has(storageKey)) continue;
    await store.remove(storageKey);
    result.removedObjects++;
  }
  return result;
}

const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** Sweeps now and then every hour; reports each result or error. Returns a stop function. */
export function scheduleSweeps(
  kv: Deno.Kv,
  store: S3ArtifactStore,
  report: (result: SweepResult | { error: unknown }) => void,
): () => void {
  const run = () => sweepBucket(kv, store).then(report, (error) => report({ error }));
  run();
  const timer = setInterval(run, SWEEP_INTERVAL_MS);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}
