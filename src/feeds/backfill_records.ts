/**
 * What the SHA-512 backfill of the updater feeds (src/feeds/backfill.ts)
 * keeps in KV: the mark that it is done, and the releases still without
 * their SHA-512. Its lease (one instance at a time) is `"sha512_backfill"`
 * in leases.ts.
 */
import { retryWhileLocked } from "../kv/atomic.ts";
import { releasesPrefix, sha512BackfillDoneKey } from "../kv/keys.ts";
import type { Release } from "../releases/types.ts";
import type { Store } from "../kv/store.ts";

export async function isSha512BackfillDone(store: Store): Promise<boolean> {
  return (await store.kv.get<boolean>(sha512BackfillDoneKey())).value === true;
}

export async function markSha512BackfillDone(store: Store): Promise<void> {
  await retryWhileLocked(() => store.kv.set(sha512BackfillDoneKey(), true));
}

/** One page of releases (any state) without a SHA-512, and where the next page starts ("" at the end). */
export async function listReleasesWithoutSha512(
  store: Store,
  { cursor, limit }: { cursor: string; limit: number },
): Promise<{ releases: Release[]; cursor: string }> {
  const iterator = store.kv.list<Release>({ prefix: releasesPrefix() }, {
    cursor: cursor || undefined,
    limit,
  });
  const releases: Release[] = [];
  let seen = 0;
  for await (const entry of iterator) {
    seen++;
    if (entry.value.checksum_sha512 === undefined) releases.push(entry.value);
  }
  return { releases, cursor: seen < limit ? "" : iterator.cursor };
}
