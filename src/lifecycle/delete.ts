/**
 * Deleting releases and projects with their artifacts. The KV records go
 * first, in commits that leave each release whole or gone
 * (src/lifecycle/delete_records.ts); the artifacts are removed after. A crash or a
 * storage failure in between leaves only an artifact no release points at,
 * which the storage sweep (src/storage/sweep.ts) removes for both backends.
 *
 * A download already streaming when its release is deleted keeps its open
 * file (fs: an unlinked file stays readable until closed) or object stream
 * (s3) and finishes, or its stream fails and the connection is cut, so a
 * client never gets a shorter file as complete (Content-Length is sent first).
 * Requests after the delete get 404 `release not found`.
 */
import type { ArtifactStore } from "../storage/mod.ts";
import {
  type DeletedRelease,
  deleteProjectRecords,
  deleteReleaseRecord,
} from "./delete_records.ts";
import type { Project } from "../projects/types.ts";
import type { Release, ReleaseState } from "../releases/types.ts";
import type { Store } from "../kv/store.ts";

/** The artifacts a delete could not remove now (the storage sweep removes them later). */
export interface ArtifactCleanup {
  leftForSweep: string[];
}

async function removeArtifacts(
  artifacts: ArtifactStore,
  storageKeys: readonly string[],
): Promise<ArtifactCleanup> {
  const leftForSweep: string[] = [];
  for (const storageKey of storageKeys) {
    try {
      await artifacts.remove(storageKey);
    } catch (error) {
      console.error(`artifact ${storageKey} not removed; the storage sweep will:`, error);
      leftForSweep.push(storageKey);
    }
  }
  return { leftForSweep };
}

/**
 * Deletes a release and then its artifact; see {@link deleteReleaseRecord}
 * for `allowLatest` and `expectState`.
 */
export async function deleteRelease(
  deps: { store: Store; artifacts: ArtifactStore },
  id: number,
  options: { allowLatest?: boolean; expectState?: ReleaseState } = {},
): Promise<DeletedRelease & ArtifactCleanup> {
  const deleted = await deleteReleaseRecord(deps.store, id, options);
  return { ...deleted, ...await removeArtifacts(deps.artifacts, [deleted.release.storage_key]) };
}

/** Deletes a project without active releases, its archived releases, then their artifacts. */
export async function deleteProject(
  deps: { store: Store; artifacts: ArtifactStore },
  id: number,
): Promise<{ project: Project; releases: Release[] } & ArtifactCleanup> {
  const deleted = await deleteProjectRecords(deps.store, id);
  const cleanup = await removeArtifacts(
    deps.artifacts,
    deleted.releases.map((release) => release.storage_key),
  );
  return { ...deleted, ...cleanup };
}
