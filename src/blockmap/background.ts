/**
 * Block maps for every release, made in the background right after the
 * upload (and once for releases stored before): one instance at a time (a
 * lease in KV, renewed per release) reads each artifact without a block map
 * once, checks its SHA-256 on the way and stores the gzipped block map in KV
 * (block_maps.ts in src/store); block maps of deleted releases are removed
 * at the start of a run. Not in the upload's own pass: building a block map costs
 * about as much CPU as the SHA-256 and SHA-512 together (docs/feeds.md), which
 * would cut upload throughput far more than 10%. Until a release has its
 * block map, its `.blockmap` URL answers 404 and electron-updater downloads
 * the whole file.
 */
import { createHash } from "node:crypto";
import type { ArtifactStore } from "../storage/mod.ts";
import {
  claimLease,
  createBlockMap,
  listReleasesWithoutBlockMap,
  type Release,
  releaseLease,
  removeOrphanBlockMaps,
} from "../store/mod.ts";
import { buildBlockMap } from "./build.ts";

/** The lease outlives a stalled holder by this long; it is renewed before every artifact. */
const LEASE_MS = 120_000;
/** How often an instance looks for new releases (an upload is picked up within this). */
const POLL_MS = 3_000;
const PAGE = 100;

export interface BlockMapWorkOptions {
  kv: Deno.Kv;
  artifacts: ArtifactStore;
  report: (
    level: "info" | "warn",
    message: string,
    fields?: Record<string, string | number>,
  ) => void;
}

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
  { kv, artifacts, report }: BlockMapWorkOptions,
  { afterId = 0, holder = crypto.randomUUID() }: { afterId?: number; holder?: string } = {},
): Promise<BlockMapRun> {
  const run: BlockMapRun = { outcome: "done", built: 0, skipped: 0, lastId: afterId };
  const lease = { holder, ttlMs: LEASE_MS };
  if (!await claimLease(kv, "block_map_build", lease)) return { ...run, outcome: "busy" };
  try {
    // Under the lease: the only writer of block maps is its holder, so no map is half-written.
    if (afterId === 0) await removeOrphanBlockMaps(kv);
    while (true) {
      const page = await listReleasesWithoutBlockMap(kv, { afterId: run.lastId, limit: PAGE });
      for (const release of page.releases) {
        if (!await claimLease(kv, "block_map_build", lease)) return { ...run, outcome: "busy" };
        if (await buildFor(release, { kv, artifacts })) run.built++;
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
    await releaseLease(kv, "block_map_build", { holder }).catch(() => {});
  }
}

/** Builds, stores and records the block map of `release`; false when its artifact is not as recorded. */
async function buildFor(
  release: Release,
  { kv, artifacts }: Pick<BlockMapWorkOptions, "kv" | "artifacts">,
): Promise<boolean> {
  const artifact = await artifacts.open(release.storage_key);
  if (artifact === null) return false;
  const sha256 = createHash("sha256");
  const { encoded } = await buildBlockMap(
    (async function* () {
      for await (const chunk of await artifact.read(0, artifact.size)) {
        sha256.update(chunk);
        yield chunk;
      }
    })(),
  );
  if (sha256.digest("hex") !== release.checksum_sha256) return false;
  // False when another instance recorded one first, or the release is gone: nothing to do.
  await createBlockMap(kv, { releaseId: release.id, madeBy: "service", bytes: encoded });
  return true;
}

/**
 * Builds block maps in the background until stopped: at once for every
 * release (those stored before block maps existed included), then every
 * POLL_MS for releases uploaded since. Returns the function that stops it.
 */
export function scheduleBlockMaps(options: BlockMapWorkOptions): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let lastId = 0;
  const run = async () => {
    try {
      // A read, not a lease write, while nothing new was uploaded.
      const newer = lastId === 0 ||
        (await listReleasesWithoutBlockMap(options.kv, { afterId: lastId, limit: 1 })).lastId !==
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
    if (stopped) return;
    const next = setTimeout(run, POLL_MS);
    Deno.unrefTimer(next);
    timer = next;
  };
  const first = setTimeout(run, 0);
  Deno.unrefTimer(first);
  timer = first;
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
