/**
 * Block maps for every release, made in the background right after the
 * upload (and once for releases stored before): one instance at a time (a
 * lease in KV, renewed per release) reads each artifact without a block map
 * once, checks its SHA-256 on the way and stores the gzipped block map in KV
 * (src/artifact_records/block_maps.ts); block maps of deleted releases are removed
 * at the start of a run. Not in the upload's own pass: building a block map costs
 * about as much CPU as the SHA-256 and SHA-512 together (docs/feeds.md), which
 * would cut upload throughput far more than 10%. Until a release has its
 * block map, its `.blockmap` URL answers 404 and electron-updater downloads
 * the whole file.
 */
import { JOB_LEASE_MS, scheduleJob } from "../lib/background_job.ts";
import { type ArtifactWorkOptions, readRecordedArtifact } from "../storage/artifact_work.ts";
import {
  createBlockMap,
  listReleasesWithoutBlockMap,
  removeOrphanBlockMaps,
} from "../artifact_records/block_maps.ts";
import { claimLease, releaseLease } from "../kv/leases.ts";
import type { Release } from "../releases/types.ts";
import { buildBlockMap } from "./build.ts";

/** How often an instance looks for new releases (an upload is picked up within this). */
const POLL_MS = 3_000;
const PAGE = 100;

export interface BlockMapRun {
  /** "busy": another instance holds the lease; "done": every release looked at has one. */
  outcome: "done" | "busy";
  built: number;
  skipped: number;
  /** The highest release id looked at (the next run starts after it). */
  lastId: number;
}

/** One run over the releases after `afterId`: builds what is missing while it holds the lease. */
export async function runBlockMapBuild(
  { store, artifacts, report }: ArtifactWorkOptions,
  { afterId = 0, holder = crypto.randomUUID() }: { afterId?: number; holder?: string } = {},
): Promise<BlockMapRun> {
  const run: BlockMapRun = { outcome: "done", built: 0, skipped: 0, lastId: afterId };
  const lease = { holder, ttlMs: JOB_LEASE_MS };
  if (!await claimLease(store, "block_map_build", lease)) return { ...run, outcome: "busy" };
  try {
    // Under the lease: the only writer of block maps is its holder, so no map is half-written.
    if (afterId === 0) await removeOrphanBlockMaps(store);
    while (true) {
      const page = await listReleasesWithoutBlockMap<Release>(store, {
        afterId: run.lastId,
        limit: PAGE,
      });
      for (const release of page.releases) {
        if (!await claimLease(store, "block_map_build", lease)) return { ...run, outcome: "busy" };
        if (await buildFor(release, { store, artifacts })) run.built++;
        else {
          run.skipped++;
          report("warn", "block map: artifact missing or not as recorded", {
            release_id: release.id,
          });
        }
      }
      if (page.lastId === run.lastId) return run;
      run.lastId = page.lastId;
    }
  } finally {
    await releaseLease(store, "block_map_build", { holder }).catch(() => {});
  }
}

/** Builds, stores and records the block map of `release`; false when its artifact is not as recorded. */
async function buildFor(
  release: Release,
  { store, artifacts }: Pick<ArtifactWorkOptions, "store" | "artifacts">,
): Promise<boolean> {
  const built = await readRecordedArtifact(artifacts, release, buildBlockMap);
  if (built === null) return false;
  // False when another instance recorded one first, or the release is gone: nothing to do.
  await createBlockMap(store, { releaseId: release.id, madeBy: "service", bytes: built.encoded });
  return true;
}

/**
 * Builds block maps in the background until stopped: at once for every
 * release (those stored before block maps existed included), then every
 * POLL_MS for releases uploaded since. Returns the function that stops it.
 */
export function scheduleBlockMaps(options: ArtifactWorkOptions): () => void {
  let lastId = 0;
  return scheduleJob(async () => {
    try {
      // A read, not a lease write, while nothing new was uploaded.
      const newer = lastId === 0 ||
        (await listReleasesWithoutBlockMap(options.store, { afterId: lastId, limit: 1 })).lastId !==
          lastId;
      const result = newer
        ? await runBlockMapBuild(options, { afterId: lastId })
        : { outcome: "done" as const, built: 0, skipped: 0, lastId };
      // A busy run starts over next time: the other instance may stop half-way.
      if (result.outcome === "done") lastId = result.lastId;
      if (result.built > 0) options.report("info", "block maps built", { built: result.built });
    } catch (error) {
      options.report("warn", "block map build failed", { error: String(error) });
    }
    return POLL_MS;
  });
}
