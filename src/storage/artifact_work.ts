import { createHash } from "node:crypto";
import type { JobReport } from "../lib/background_job.ts";
import type { Store } from "../kv/store.ts";
import type { ArtifactStore } from "./types.ts";

/**
 * What a background job that reads stored artifacts is given (block maps in
 * src/blockmap, the SHA-512 backfill in src/feeds).
 */
export interface ArtifactWorkOptions {
  store: Store;
  artifacts: ArtifactStore;
  /** Service events (a release skipped, a run done or failed). */
  report: JobReport;
}

/** What a job needs of a release to read its artifact: where it is and its SHA-256 (hex). */
export interface RecordedArtifact {
  storage_key: string;
  checksum_sha256: string;
}

/**
 * Reads a release's artifact once, its chunks to `consume`, checking its
 * SHA-256 on the way: `consume`'s result, or null when the artifact is
 * missing or not the one recorded.
 */
export async function readRecordedArtifact<T>(
  artifacts: ArtifactStore,
  recorded: RecordedArtifact,
  consume: (chunks: AsyncIterable<Uint8Array>) => Promise<T>,
): Promise<T | null> {
  const artifact = await artifacts.open(recorded.storage_key);
  if (artifact === null) return null;
  const sha256 = createHash("sha256");
  const chunks = await artifact.read(0, artifact.size);
  const result = await consume((async function* () {
    for await (const chunk of chunks) {
      sha256.update(chunk);
      yield chunk;
    }
  })());
  return sha256.digest("hex") === recorded.checksum_sha256 ? result : null;
}
