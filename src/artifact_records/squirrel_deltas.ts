/**
 * Squirrel.Windows' delta package of a release (docs/feeds.md "Squirrel.Windows
 * deltas"): the `{App}-{version}-delta.nupkg` Squirrel's releasify made from
 * one older version to this release, uploaded with the release; `RELEASES`
 * lists it when it is part of a complete chain from the client's version. The
 * file lives in the artifact store; the storage sweep keeps those of existing
 * releases (`listStorageKeys` in releases.ts).
 */
import { squirrelDeltaKey, squirrelDeltasPrefix } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";
import { eachRecord, setWhileReleaseExists } from "./with_release.ts";

export interface SquirrelDelta {
  release_id: number;
  /** The version the delta applies to (the release releasify diffed against). */
  from: string;
  /** `{App}-{version}-delta.nupkg`: Squirrel.Windows reads the version from it. */
  filename: string;
  storage_key: string;
  checksum_sha256: string;
  size_bytes: number;
}

/** Records a release's delta in one checked commit, while the release exists; false if gone. */
export async function createSquirrelDelta(store: Store, delta: SquirrelDelta): Promise<boolean> {
  return await setWhileReleaseExists(store, delta.release_id, [
    [squirrelDeltaKey(delta.release_id), delta],
  ]);
}

/** The delta of release `releaseId`, or null. */
export async function getSquirrelDelta(
  store: Store,
  releaseId: number,
): Promise<SquirrelDelta | null> {
  return (await store.kv.get<SquirrelDelta>(squirrelDeltaKey(releaseId))).value;
}

/** Every release's delta (the storage sweep keeps those whose release exists). */
export function listAllSquirrelDeltas(store: Store): AsyncGenerator<SquirrelDelta> {
  return eachRecord(store, squirrelDeltasPrefix());
}
