/**
 * What the SHA-512 backfill of the updater feeds (src/feeds/backfill.ts)
 * keeps in KV: a lease, so that one instance at a time runs it, the mark
 * that it is done, and the releases still without their SHA-512.
 */
import { retryWhileLocked } from "./atomic.ts";
import { releasesPrefix, sha512BackfillDoneKey, sha512BackfillLeaseKey } from "./keys.ts";
import type { Release } from "./types.ts";

interface Lease {
  holder: string;
}

/**
 * Takes (or renews) the backfill's lease for `holder` for `ttlMs`: false
 * while another holder's lease runs.
 */
export async function takeSha512BackfillLease(
  kv: Deno.Kv,
  holder: string,
  ttlMs: number,
): Promise<boolean> {
  return await retryWhileLocked(async () => {
    const entry = await kv.get<Lease>(sha512BackfillLeaseKey());
    if (entry.value !== null && entry.value.holder !== holder) return false;
    const commit = await kv.atomic().check(entry)
      .set(sha512BackfillLeaseKey(), { holder }, { expireIn: ttlMs }).commit();
    return commit.ok;
  });
}

/** Gives the lease up when `holder` has it. */
export async function releaseSha512BackfillLease(kv: Deno.Kv, holder: string): Promise<void> {
  const entry = await kv.get<Lease>(sha512BackfillLeaseKey());
  if (entry.value?.holder !== holder) return;
  await kv.atomic().check(entry).delete(sha512BackfillLeaseKey()).commit();
}

export async function isSha512BackfillDone(kv: Deno.Kv): Promise<boolean> {
  return (await kv.get<boolean>(sha512BackfillDoneKey())).value === true;
}

export async function markSha512BackfillDone(kv: Deno.Kv): Promise<void> {
  await retryWhileLocked(() => kv.set(sha512BackfillDoneKey(), true));
}

/** One page of releases (any state) without a SHA-512, and where the next page starts ("" at the end). */
export async function listReleasesWithoutSha512(
  kv: Deno.Kv,
  { cursor, limit }: { cursor: string; limit: number },
): Promise<{ releases: Release[]; cursor: string }> {
  const iterator = kv.list<Release>({ prefix: releasesPrefix() }, {
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
