/**
 * What the delta builder's runs (background.ts, artifact_patches.ts) share:
 * copying a release's artifact to disk, holding the builder's lease through a
 * build, building from each base in turn, and clearing what a crashed build
 * left in the work directory.
 */
import { JOB_LEASE_MS, type JobReport } from "../lib/background_job.ts";
import { readDirEntries } from "../lib/files.ts";
import { readRecordedArtifact } from "../storage/artifact_work.ts";
import type { ArtifactStore } from "../storage/types.ts";
import { claimLease } from "../kv/leases.ts";
import type { Store } from "../kv/store.ts";
import type { Release } from "../releases/types.ts";
import { DeltaToolMissingError } from "./tools.ts";

/** The builder's lease: one build at a time across instances. */
export const BUILD_LEASE = "velopack_deltas";

/**
 * Copies `release`'s artifact to `path`, its SHA-256 checked, each chunk also given to `hash`
 * when there is one; false when the artifact is missing or not as recorded.
 */
export async function copyArtifact(
  artifacts: ArtifactStore,
  release: Release,
  { path, hash }: { path: string; hash?: { update(chunk: Uint8Array): unknown } },
): Promise<boolean> {
  const copied = await readRecordedArtifact(artifacts, release, async (chunks) => {
    using file = await Deno.open(path, { write: true, create: true, truncate: true });
    const writer = file.writable.getWriter();
    for await (const chunk of chunks) {
      hash?.update(chunk);
      await writer.write(chunk);
    }
    await writer.close();
    return true;
  });
  return copied === true;
}

/**
 * Runs `build` while `holder` holds the builder's lease, renewed every third of its time until
 * the build ends (copies, programs and the upload of the result included); "busy" when another
 * instance holds it.
 */
async function withBuildLease<T>(
  store: Store,
  holder: string,
  build: () => Promise<T>,
): Promise<T | "busy"> {
  const lease = { holder, ttlMs: JOB_LEASE_MS };
  if (!await claimLease(store, BUILD_LEASE, lease)) return "busy";
  const timer = setInterval(() => {
    claimLease(store, BUILD_LEASE, lease).catch(() => {});
  }, JOB_LEASE_MS / 3);
  try {
    return await build();
  } finally {
    clearInterval(timer);
  }
}

/** What a run counts of the builds it tried (both runs' counts have these). */
export interface BuildCounts {
  outcome: "done" | "busy";
  failed: number;
  /** Why builds are skipped (a program missing), or null. */
  missing: string | null;
  /** Where a later run starts to build what was skipped, or null. */
  retryAfterId: number | null;
}

/** One build to `release` from each of `bases`, each under the builder's lease. */
interface BaseBuilds {
  store: Store;
  holder: string;
  artifacts: ArtifactStore;
  report: JobReport;
  counts: BuildCounts;
  release: Release;
  bases: Release[];
  /** Where each base's artifact is copied before its build. */
  fromPath: string;
  /** The log message of a failed build. */
  failedMessage: string;
  build(from: Release): Promise<void>;
}

/**
 * Builds from each base in turn: a build that fails is reported and counted, and the next base
 * is tried; a program missing or another instance holding the lease ends the loop (a later run
 * takes it up from `counts.retryAfterId`).
 */
export async function buildFromBases(builds: BaseBuilds): Promise<void> {
  const { counts, release } = builds;
  for (const from of builds.bases) {
    const outcome = await withBuildLease(builds.store, builds.holder, async () => {
      if (!await copyArtifact(builds.artifacts, from, { path: builds.fromPath })) return "skipped";
      try {
        await builds.build(from);
      } catch (error) {
        const message = String(error instanceof Error ? error.message : error).slice(0, 300);
        if (error instanceof DeltaToolMissingError) {
          counts.missing = message;
          counts.retryAfterId ??= release.id - 1;
          return "missing";
        }
        counts.failed++;
        builds.report("warn", builds.failedMessage, {
          release_id: release.id,
          from_release_id: from.id,
          error: message,
        });
      }
      return "done";
    });
    if (outcome === "busy") counts.outcome = "busy";
    if (outcome === "busy" || outcome === "missing") return;
  }
}

/**
 * Removes what builds left in `workDir` (a build that crashed or was stopped): every entry
 * last changed more than `olderThanMs` ago, so that a build running on another instance
 * sharing the directory keeps its files.
 */
export async function clearStaleWork(workDir: string, olderThanMs: number): Promise<number> {
  let removed = 0;
  for (const entry of await readDirEntries(workDir)) {
    const path = `${workDir}/${entry.name}`;
    const info = await Deno.lstat(path).catch(() => null);
    if (info === null || (info.mtime?.getTime() ?? 0) > Date.now() - olderThanMs) continue;
    await Deno.remove(path, { recursive: true }).then(() => removed++, () => {});
  }
  return removed;
}
