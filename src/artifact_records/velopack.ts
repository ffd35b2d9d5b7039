/**
 * What the Velopack feed (docs/feeds.md "Velopack") knows of a release beyond
 * its record: the package id, version and SHA-1 read from its `.nupkg`
 * (Velopack's client checks a download's SHA-1), and the delta packages the
 * service built to it from older releases, one per older release. The delta
 * files live in the artifact store; the storage sweep keeps those of
 * existing releases (`listStorageKeys` in releases.ts).
 */
import {
  velopackDeltaKey,
  velopackDeltasPrefix,
  velopackPackageKey,
  velopackPackagesPrefix,
} from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";
import {
  eachRecord,
  lastRecordedReleaseId,
  listRecords,
  setWhileReleaseExists,
} from "./with_release.ts";

/** A release read as a Velopack package, or why it is none (`package_id` null). */
export interface VelopackPackage {
  release_id: number;
  /** The `<id>` of the package's `.nuspec`; null when the artifact is no Velopack package. */
  package_id: string | null;
  /** The `<version>` of the `.nuspec` (SemVer 2). */
  version: string;
  /** SHA-1 of the artifact, hex. */
  sha1: string;
  /** Why the artifact is no Velopack package, when it is none. */
  problem?: string;
}

/** A delta package the service built from an older release to a newer one. */
export interface VelopackDelta {
  release_id: number;
  from_release_id: number;
  /** The older release's package version (the client's `localVersion`). */
  from_version: string;
  storage_key: string;
  checksum_sha256: string;
  sha1: string;
  size_bytes: number;
  /** How long the build took, in milliseconds. */
  build_ms: number;
}

/** Whether a release's file is one the Velopack feed offers (a `.nupkg`). */
export function isVelopackFile(filename: string): boolean {
  return filename.toLowerCase().endsWith(".nupkg");
}

export async function getVelopackPackage(
  store: Store,
  releaseId: number,
): Promise<VelopackPackage | null> {
  return (await store.kv.get<VelopackPackage>(velopackPackageKey(releaseId))).value;
}

export async function getVelopackPackages(
  store: Store,
  releaseIds: readonly number[],
): Promise<Map<number, VelopackPackage>> {
  const found = new Map<number, VelopackPackage>();
  if (releaseIds.length === 0) return found;
  for (let i = 0; i < releaseIds.length; i += 10) {
    const entries = await store.kv.getMany<VelopackPackage[]>(
      releaseIds.slice(i, i + 10).map(velopackPackageKey),
    );
    for (const entry of entries) if (entry.value) found.set(entry.value.release_id, entry.value);
  }
  return found;
}

/** Records what a release is as a Velopack package, while the release exists; false if gone. */
export async function putVelopackPackage(store: Store, pkg: VelopackPackage): Promise<boolean> {
  return await setWhileReleaseExists(store, pkg.release_id, [
    [velopackPackageKey(pkg.release_id), pkg],
  ]);
}

/** Records a built delta, while its release exists; false if gone. */
export async function putVelopackDelta(store: Store, delta: VelopackDelta): Promise<boolean> {
  return await setWhileReleaseExists(store, delta.release_id, [
    [velopackDeltaKey(delta.release_id, delta.from_release_id), delta],
  ]);
}

/** The deltas built to `releaseId`, by the id of the release each starts from. */
export async function listVelopackDeltas(
  store: Store,
  releaseId: number,
): Promise<VelopackDelta[]> {
  return await listRecords(store, velopackDeltasPrefix(releaseId));
}

/** Every delta of every release (the storage sweep keeps those whose release exists). */
export function listAllVelopackDeltas(store: Store): AsyncGenerator<VelopackDelta> {
  return eachRecord(store, velopackDeltasPrefix());
}

/** The highest release id that has a package record (where the next build run starts). */
export async function lastVelopackPackageId(store: Store): Promise<number> {
  return await lastRecordedReleaseId(store, velopackPackagesPrefix());
}
