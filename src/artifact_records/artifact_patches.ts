/**
 * Server-made patches of whole artifacts (docs/feeds.md "Server-made
 * patches"): a zstd `--patch-from` patch from an older release's artifact to a
 * newer one's, which the reference client applies to its installed file
 * (docs/client-api.md "Server-made patches"). One per older release; the
 * patch files live in the artifact store and the storage sweep keeps those of
 * existing releases (`listStorageKeys` in releases.ts).
 */
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import { artifactPatchesPrefix, artifactPatchKey, releaseKey } from "../kv/keys.ts";
import type { Release } from "../projects/types.ts";
import type { Store } from "../kv/store.ts";

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
  return await commitWithRetry(async () => {
    const release = await store.kv.get<Release>(releaseKey(patch.release_id));
    if (release.value === null) return { commit: NOTHING_TO_WRITE, value: false };
    const commit = await store.kv.atomic().check(release)
      .set(artifactPatchKey(patch.release_id, patch.from_release_id), patch).commit();
    return { commit, value: true };
  });
}

/** The patches built to `releaseId`, by the id of the release each starts from. */
export async function listArtifactPatches(
  store: Store,
  releaseId: number,
): Promise<ArtifactPatch[]> {
  const patches: ArtifactPatch[] = [];
  for await (
    const entry of store.kv.list<ArtifactPatch>({ prefix: artifactPatchesPrefix(releaseId) })
  ) patches.push(entry.value);
  return patches;
}

/** Every patch of every release (the storage sweep keeps those whose release exists). */
export async function* listAllArtifactPatches(store: Store): AsyncGenerator<ArtifactPatch> {
  for await (const entry of store.kv.list<ArtifactPatch>({ prefix: artifactPatchesPrefix() })) {
    yield entry.value;
  }
}

/** The highest release id that has a patch (where the next build run starts). */
export async function lastArtifactPatchReleaseId(store: Store): Promise<number> {
  for await (
    const entry of store.kv.list<ArtifactPatch>({ prefix: artifactPatchesPrefix() }, {
      reverse: true,
      limit: 1,
    })
  ) return entry.value.release_id;
  return 0;
}
