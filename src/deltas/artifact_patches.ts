/**
 * Server-made patches of whole artifacts (docs/feeds.md "Server-made
 * patches"), built by the delta builder's runs (background.ts) for every
 * release that is no Velopack package and is its project's newest when the
 * builder reaches it: a zstd `--patch-from` patch (tools.ts,
 * within its time and memory limits) from each of the project's newest older
 * releases (the project's "deltas kept", 10 unless set) straight to the new
 * one. The reference client applies one to its installed file
 * (docs/client-api.md "Server-made patches"); until it is built, the client
 * takes the block map, then the whole file.
 */
import type { JobReport } from "../lib/background_job.ts";
import type { ArtifactStore } from "../storage/types.ts";
import { listArtifactPatches, putArtifactPatch } from "../artifact_records/artifact_patches.ts";
import { listReleasesByProject } from "../releases/releases.ts";
import type { Store } from "../kv/store.ts";
import type { Release } from "../releases/types.ts";
import { getVelopackSettings } from "../velopack/settings.ts";
import { DEFAULT_DELTA_LIMITS, type DeltaLimits, zstdPatch } from "./tools.ts";
import { type BuildCounts, buildFromBases, copyArtifact } from "./work.ts";

export interface PatchWork {
  store: Store;
  artifacts: ArtifactStore;
  report: JobReport;
  workDir: string;
  limits?: DeltaLimits;
  /** The builder's lease holder (one build at a time across instances). */
  holder: string;
}

export interface PatchCounts extends BuildCounts {
  patches: number;
}

/** Builds and records the patch from `from` to `to` (both on disk); false when it saves nothing. */
async function buildPatch(
  work: PatchWork,
  { to, from, toPath, fromPath }: { to: Release; from: Release; toPath: string; fromPath: string },
): Promise<boolean> {
  const limits = work.limits ?? DEFAULT_DELTA_LIMITS;
  const outPath = `${toPath}.from-${from.id}.zst`;
  try {
    const started = performance.now();
    await zstdPatch({
      oldPath: fromPath,
      newPath: toPath,
      outPath,
      limits,
      deadline: Date.now() + limits.timeoutMs,
    });
    const buildMs = Math.round(performance.now() - started);
    // A patch as large as the file saves nothing: the client downloads the file.
    if ((await Deno.stat(outPath)).size >= to.size_bytes) return false;
    const file = await Deno.open(outPath);
    const stored = await work.artifacts.save(file.readable, to.size_bytes);
    try {
      const recorded = await putArtifactPatch(work.store, {
        release_id: to.id,
        from_release_id: from.id,
        from_version: from.version,
        from_sha256: from.checksum_sha256.toLowerCase(),
        storage_key: stored.storage_key,
        checksum_sha256: stored.checksum_sha256,
        size_bytes: stored.size_bytes,
        build_ms: buildMs,
      });
      if (!recorded) await work.artifacts.remove(stored.storage_key);
    } finally {
      work.artifacts.settle?.(stored.storage_key);
    }
    return true;
  } finally {
    await Deno.remove(outPath).catch(() => {});
  }
}

/**
 * The patches to `release`, while it is its project's newest release, from the project's newest
 * older releases that have none yet.
 */
export async function buildArtifactPatches(
  work: PatchWork,
  release: Release,
  counts: PatchCounts,
): Promise<void> {
  const { store } = work;
  // Only to the project's newest release: one already superseded is rarely downloaded again.
  const [newest] = await listReleasesByProject(store, release.project_id, 1);
  if (newest?.id !== release.id) return;
  const { deltas_kept } = await getVelopackSettings(store, release.project_id);
  if (deltas_kept === 0) return;
  const built = new Set(
    (await listArtifactPatches(store, release.id)).map((p) => p.from_release_id),
  );
  // The newest releases, with room for re-uploads of the new version.
  const releases = await listReleasesByProject(store, release.project_id, 4 * deltas_kept + 1);
  const bases = releases
    .filter((r) => r.id < release.id && r.version !== release.version)
    .slice(0, deltas_kept)
    .filter((r) => !built.has(r.id));
  if (bases.length === 0) return;
  // A program missing: the builds wait for a later run.
  if (counts.missing !== null) {
    counts.retryAfterId ??= release.id - 1;
    return;
  }
  const dir = await Deno.makeTempDir({ dir: work.workDir, prefix: "patch-" });
  try {
    const toPath = `${dir}/new`;
    if (!await copyArtifact(work.artifacts, release, { path: toPath })) {
      work.report("warn", "patch: artifact missing or not as recorded", { release_id: release.id });
      return;
    }
    await buildFromBases({
      store,
      holder: work.holder,
      artifacts: work.artifacts,
      report: work.report,
      counts,
      release,
      bases,
      fromPath: `${dir}/old`,
      failedMessage: "patch: build failed",
      async build(from) {
        if (await buildPatch(work, { to: release, from, toPath, fromPath: `${dir}/old` })) {
          counts.patches++;
        }
      },
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
