/**
 * Server-made Velopack deltas (docs/feeds.md "Server-made deltas"), built in
 * the background after each upload by one instance at a time (a lease in KV,
 * renewed per build): each `.nupkg` release is read once (its SHA-256
 * checked, its SHA-1 and `.nuspec` recorded); for the project's newest one, a
 * delta package is built from each of the project's newest older Velopack
 * releases of the same package id (the project's "deltas kept", 10 unless
 * set) straight to it, one build at a time within the limits of tools.ts. Until a delta is built the
 * feed lists the full package only. Every other release, while its project's
 * newest, gets patches of its whole artifact from the same number of older
 * releases (artifact_patches.ts).
 */
import { createHash } from "node:crypto";
import { JOB_LEASE_MS, type JobReport, scheduleJob } from "../lib/background_job.ts";
import type { ArtifactStore } from "../storage/types.ts";
import { lastArtifactPatchReleaseId } from "../artifact_records/artifact_patches.ts";
import { claimLease, releaseLease } from "../kv/leases.ts";
import { listReleasesAfter, listReleasesByProject } from "../releases/releases.ts";
import type { Store } from "../kv/store.ts";
import type { Release } from "../releases/types.ts";
import {
  getVelopackPackage,
  getVelopackPackages,
  isVelopackFile,
  lastVelopackPackageId,
  listVelopackDeltas,
  putVelopackDelta,
  putVelopackPackage,
  type VelopackPackage,
} from "../artifact_records/velopack.ts";
import { getVelopackSettings } from "../velopack/settings.ts";
import { buildArtifactPatches } from "./artifact_patches.ts";
import { readNuspec } from "./nupkg.ts";
import { DEFAULT_DELTA_LIMITS, type DeltaLimits } from "./tools.ts";
import { buildVelopackDelta } from "./velopack_delta.ts";
import { BUILD_LEASE, buildFromBases, clearStaleWork, copyArtifact } from "./work.ts";

const POLL_MS = 3_000;
const RETRY_MS = 60_000;
const PAGE = 100;
/** The largest delta package kept (a delta this large is no saving). */
const MAX_DELTA_BYTES = 8 * 1024 * 1024 * 1024;

export interface DeltaWorkOptions {
  store: Store;
  artifacts: ArtifactStore;
  report: JobReport;
  /** Where builds unpack packages (a fresh directory per build, removed after). */
  workDir: string;
  limits?: DeltaLimits;
}

export interface DeltaRun {
  outcome: "done" | "busy";
  packages: number;
  deltas: number;
  /** Patches of whole artifacts built (artifact_patches.ts). */
  patches: number;
  failed: number;
  lastId: number;
  /**
   * Why builds were skipped (a program missing: `zstd`, `zip`, `unzip` or `prlimit`), or null.
   * Packages are still read; the builds wait for a later run.
   */
  missing: string | null;
  /** Where a later run starts to build what was skipped, or null when nothing was. */
  retryAfterId: number | null;
}

/** Reads `release` as a Velopack package and records what it is. */
async function recordPackage(
  options: DeltaWorkOptions,
  release: Release,
  path: string,
): Promise<VelopackPackage | null> {
  const hash = createHash("sha1");
  if (!await copyArtifact(options.artifacts, release, { path, hash })) return null;
  const sha1 = hash.digest("hex").toUpperCase();
  const nuspec = await readNuspec(path);
  const pkg: VelopackPackage = "problem" in nuspec
    ? { release_id: release.id, package_id: null, version: "", sha1, problem: nuspec.problem }
    : { release_id: release.id, package_id: nuspec.id, version: nuspec.version, sha1 };
  return await putVelopackPackage(options.store, pkg) ? pkg : null;
}

/** Builds and records the delta from `from` to `to` (both on disk at the paths given). */
async function buildDelta(
  options: DeltaWorkOptions,
  { to, from, toPath, fromPath, fromVersion }: {
    to: Release;
    from: Release;
    toPath: string;
    fromPath: string;
    fromVersion: string;
  },
): Promise<void> {
  const workDir = await Deno.makeTempDir({ dir: options.workDir, prefix: "delta-" });
  try {
    const started = performance.now();
    const built = await buildVelopackDelta({
      oldPackage: fromPath,
      newPackage: toPath,
      workDir,
      limits: options.limits ?? DEFAULT_DELTA_LIMITS,
    });
    const sha1 = createHash("sha1");
    const file = await Deno.open(built.path);
    const stored = await options.artifacts.save(
      file.readable.pipeThrough(
        new TransformStream({
          transform(chunk, controller) {
            sha1.update(chunk);
            controller.enqueue(chunk);
          },
        }),
      ),
      MAX_DELTA_BYTES,
    );
    const recorded = await putVelopackDelta(options.store, {
      release_id: to.id,
      from_release_id: from.id,
      from_version: fromVersion,
      storage_key: stored.storage_key,
      checksum_sha256: stored.checksum_sha256,
      sha1: sha1.digest("hex").toUpperCase(),
      size_bytes: stored.size_bytes,
      build_ms: Math.round(performance.now() - started),
    });
    if (!recorded) await options.artifacts.remove(stored.storage_key);
  } finally {
    await Deno.remove(workDir, { recursive: true }).catch(() => {});
  }
}

/** The package of `release` and the deltas to it from the older releases kept. */
async function processRelease(
  options: DeltaWorkOptions & { holder: string },
  release: Release,
  counts: DeltaRun,
): Promise<void> {
  const { store, report } = options;
  const dir = await Deno.makeTempDir({ dir: options.workDir, prefix: "release-" });
  try {
    const toPath = `${dir}/new.nupkg`;
    let pkg = await getVelopackPackage(store, release.id);
    let copied = false;
    if (pkg === null) {
      pkg = await recordPackage(options, release, toPath);
      if (pkg === null) {
        report("warn", "velopack: artifact missing or not as recorded", {
          release_id: release.id,
        });
        return;
      }
      copied = true;
      counts.packages++;
    }
    if (pkg.package_id === null) return;
    const { deltas_kept } = await getVelopackSettings(store, release.project_id);
    // The newest releases, with room for other files and re-uploads of the new version.
    const projectReleases = (await listReleasesByProject(
      store,
      release.project_id,
      4 * deltas_kept + 1,
    )).filter((r) => isVelopackFile(r.filename));
    // Only the project's newest Velopack release gets deltas: one superseded before its turn
    // came (or read again after a restore) would be offered to few, if any.
    if (projectReleases.some((r) => r.id > release.id)) return;
    const built = new Set(
      (await listVelopackDeltas(store, release.id)).map((d) => d.from_release_id),
    );
    const older = projectReleases.filter((r) => r.id < release.id);
    const packages = await getVelopackPackages(store, older.map((r) => r.id));
    const bases = older.filter((r) => {
      const base = packages.get(r.id);
      return base?.package_id === pkg.package_id && base.version !== pkg.version;
    }).slice(0, deltas_kept).filter((r) => !built.has(r.id));
    if (bases.length === 0) return;
    // A program missing: the builds wait for the next run (the package is recorded).
    if (counts.missing !== null) {
      counts.retryAfterId ??= release.id - 1;
      return;
    }
    if (!copied && !await copyArtifact(options.artifacts, release, { path: toPath })) return;
    await buildFromBases({
      store,
      holder: options.holder,
      artifacts: options.artifacts,
      report,
      counts,
      release,
      bases,
      fromPath: `${dir}/old.nupkg`,
      failedMessage: "velopack: delta build failed",
      async build(from) {
        await buildDelta(options, {
          to: release,
          from,
          toPath,
          fromPath: `${dir}/old.nupkg`,
          fromVersion: packages.get(from.id)!.version,
        });
        counts.deltas++;
      },
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** One run over the releases after `afterId`, while it holds the lease. */
export async function runVelopackDeltas(
  options: DeltaWorkOptions & { holder?: string },
  { afterId = 0 }: { afterId?: number } = {},
): Promise<DeltaRun> {
  const holder = options.holder ?? crypto.randomUUID();
  const work = { ...options, holder };
  const run: DeltaRun = {
    outcome: "done",
    packages: 0,
    deltas: 0,
    patches: 0,
    failed: 0,
    lastId: afterId,
    missing: null,
    retryAfterId: null,
  };
  const lease = { holder, ttlMs: JOB_LEASE_MS };
  if (!await claimLease(options.store, BUILD_LEASE, lease)) {
    return { ...run, outcome: "busy" };
  }
  try {
    await Deno.mkdir(options.workDir, { recursive: true });
    while (true) {
      const page = await listReleasesAfter(options.store, run.lastId, PAGE);
      for (const release of page) {
        if (isVelopackFile(release.filename)) await processRelease(work, release, run);
        else await buildArtifactPatches(work, release, run);
        if (run.outcome === "busy") return run;
        run.lastId = release.id;
      }
      if (page.length < PAGE) return run;
    }
  } finally {
    await releaseLease(options.store, BUILD_LEASE, { holder }).catch(() => {});
  }
}

/**
 * Builds packages' records and deltas in the background until stopped: from the
 * release after the last one recorded, then every POLL_MS for new uploads.
 */
export function scheduleVelopackDeltas(options: DeltaWorkOptions): () => void {
  let lastId: number | null = null;
  return scheduleJob(async () => {
    try {
      if (lastId === null) {
        // What builds that crashed or were stopped left behind.
        await clearStaleWork(options.workDir, JOB_LEASE_MS);
      }
      lastId ??= Math.max(
        0,
        Math.max(
          await lastVelopackPackageId(options.store),
          await lastArtifactPatchReleaseId(options.store),
        ) - 1,
      );
      const newer = (await listReleasesAfter(options.store, lastId, 1)).length > 0;
      if (!newer) return POLL_MS;
      const result = await runVelopackDeltas(options, { afterId: lastId });
      if (result.outcome === "done") lastId = result.retryAfterId ?? result.lastId;
      if (result.deltas > 0 || result.patches > 0 || result.failed > 0) {
        options.report("info", "velopack deltas built", {
          deltas: result.deltas,
          patches: result.patches,
          failed: result.failed,
        });
      }
      if (result.missing !== null) {
        options.report("warn", "velopack: builds wait for a missing program", {
          error: result.missing,
        });
        return RETRY_MS;
      }
    } catch (error) {
      options.report("warn", "velopack delta build failed", { error: String(error) });
      // Tried again later (KV failing): not every few seconds.
      return RETRY_MS;
    }
    return POLL_MS;
  });
}
