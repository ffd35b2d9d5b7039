/**
 * Squirrel.Windows' delta package of a release (docs/feeds.md "Squirrel.Windows
 * deltas"): the `{App}-{version}-delta.nupkg` Squirrel's releasify made from
 * one older version to this release, uploaded with the release; `RELEASES`
 * lists it when it is part of a complete chain from the client's version. The
 * file lives in the artifact store; the storage sweep keeps those of existing
 * releases (`listStorageKeys` in releases.ts).
 */
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import { releaseKey, squirrelDeltaKey, squirrelDeltasPrefix } from "../kv/keys.ts";
import type { Release } from "../projects/types.ts";
import type { Store } from "../kv/store.ts";

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
  return await commitWithRetry(async () => {
    const release = await store.kv.get<Release>(releaseKey(delta.release_id));
    if (release.value === null) return { commit: NOTHING_TO_WRITE, value: false };
    const op = store.kv.atomic().check(release).set(squirrelDeltaKey(delta.release_id), delta);
    return { commit: await op.commit(), value: true };
  });
}

/** The delta of release `releaseId`, or null. */
export async function getSquirrelDelta(
  store: Store,
  releaseId: number,
): Promise<SquirrelDelta | null> {
  return (await store.kv.get<SquirrelDelta>(squirrelDeltaKey(releaseId))).value;
}

/** Every release's delta (the storage sweep keeps those whose release exists). */
export async function* listAllSquirrelDeltas(store: Store): AsyncGenerator<SquirrelDelta> {
  for await (const entry of store.kv.list<SquirrelDelta>({ prefix: squirrelDeltasPrefix() })) {
    yield entry.value;
  }
}
