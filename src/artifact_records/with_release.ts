/**
 * What the records of a release's files share: each is written in one commit
 * checked against its release, so none is written for a release deleted
 * meanwhile (a delete takes the records it finds along), and read back by its
 * key prefix.
 */
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import { releaseKey } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

/**
 * Sets `entries` in one commit checked against release `releaseId`, while the
 * release exists; false (nothing written) when it is gone.
 */
export async function setWhileReleaseExists(
  store: Store,
  releaseId: number,
  entries: ReadonlyArray<readonly [Deno.KvKey, unknown]>,
): Promise<boolean> {
  return await commitWithRetry(async () => {
    const release = await store.kv.get(releaseKey(releaseId));
    if (release.value === null) return { commit: NOTHING_TO_WRITE, value: false };
    const op = store.kv.atomic().check(release);
    for (const [key, value] of entries) op.set(key, value);
    return { commit: await op.commit(), value: true };
  });
}

/**
 * The highest release id among the records under `prefix` (records keyed by
 * their release first), 0 when there is none.
 */
export async function lastRecordedReleaseId(store: Store, prefix: Deno.KvKey): Promise<number> {
  const last = store.kv.list<{ release_id: number }>({ prefix }, { reverse: true, limit: 1 });
  for await (const entry of last) return entry.value.release_id;
  return 0;
}

/** The records under `prefix`, in key order. */
export async function listRecords<T>(store: Store, prefix: Deno.KvKey): Promise<T[]> {
  return await Array.fromAsync(eachRecord<T>(store, prefix));
}

/** The records under `prefix`, one at a time, in key order. */
export async function* eachRecord<T>(store: Store, prefix: Deno.KvKey): AsyncGenerator<T> {
  for await (const entry of store.kv.list<T>({ prefix })) yield entry.value;
}
