/**
 * Server-made patches of whole artifacts (docs/feeds.md "Server-made
 * patches"): a zstd `--patch-from` patch from an older release's artifact to a
 * newer one's, which the reference client applies to its installed file
 * (docs/client-api.md "Server-made patches"). One per older release; the
 * patch files live in the artifact store and the storage sweep keeps those of
 * existing releases (`listStorageKeys` in releases.ts).
 */
import { artifactPatchesPrefix, artifactPatchKey } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";
import {
  eachRecord,
  lastRecordedReleaseId,
  listRecords,
  setWhileReleaseExists,
} from "./with_release.ts";

/** A patch the service built from an older release's artifact to a newer one's. */
export interface ArtifactPatch {
  release_id: number;
  from_release_id: number;
  /** The older release's version (what the client says it has installed). */
  from_version: string;
  /** The older release's artifact SHA-256 (the file the patch applies to). */
  from_sha256: string;
  storage_key: string;
  /** SHA-256 of the patch file itself. */
  checksum_sha256: string;
  size_bytes: number;
  /** How long the build took, in milliseconds. */
  build_ms: number;
}

/** Records a built patch, while its release exists; false if gone. */
export async function putArtifactPatch(store: Store, patch: ArtifactPatch): Promise<boolean> {
  return await setWhileReleaseExists(store, patch.release_id, [
    [artifactPatchKey(patch.release_id, patch.from_release_id), patch],
  ]);
}

/** The patches built to `releaseId`, by the id of the release each starts from. */
export async function listArtifactPatches(
  store: Store,
  releaseId: number,
): Promise<ArtifactPatch[]> {
  return await listRecords(store, artifactPatchesPrefix(releaseId));
}

/** Every patch of every release (the storage sweep keeps those whose release exists). */
export function listAllArtifactPatches(store: Store): AsyncGenerator<ArtifactPatch> {
  return eachRecord(store, artifactPatchesPrefix());
}

/** The highest release id that has a patch (where the next build run starts). */
export async function lastArtifactPatchReleaseId(store: Store): Promise<number> {
  return await lastRecordedReleaseId(store, artifactPatchesPrefix());
}
