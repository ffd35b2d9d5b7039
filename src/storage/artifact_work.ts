import type { JobReport } from "../lib/background_job.ts";
import type { Store } from "../store/store.ts";
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
