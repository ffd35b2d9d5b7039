/** Download counters, and the read-only figures for the admin dashboard. */
import {
  downloadsByDayKey,
  downloadsByDayPrefix,
  type DownloadScope,
  keyDownloadsKey,
  keyDownloadsPrefix,
  releaseDownloadsKey,
  releasesPrefix,
  topKeysKey,
} from "../kv/keys.ts";
import { claimLease, releaseLease } from "../kv/leases.ts";
import type { Release } from "../releases/types.ts";
import type { Store } from "../kv/store.ts";

/** The most recently created releases of all projects (ids grow with creation time). */
export async function listRecentReleases(store: Store, limit: number): Promise<Release[]> {
  const releases: Release[] = [];
  for await (
    const entry of store.kv.list<Release>({ prefix: releasesPrefix() }, { reverse: true, limit })
  ) {
    releases.push(entry.value);
  }
  return releases;
}

/** One finished download: which release (of which project) was fetched with which key. */
export interface DownloadEvent {
  releaseId: number;
  projectId: number;
  keyId: number;
  /** When; defaults to now. The UTC day of it picks the per-day counters. */
  at?: Date;
}

/**
 * Counts one download in a single atomic commit of KV `sum`s: the release's
 * total, the day's counters (all downloads, the project's, the release's) and
 * the key's total. Sums never read, so concurrent downloads never conflict,
 * and the download costs one commit however many counters it feeds.
 */
export async function countDownload(store: Store, download: DownloadEvent): Promise<void> {
  const day = utcDay(download.at ?? new Date());
  await store.kv.atomic()
    .sum(releaseDownloadsKey(download.releaseId), 1n)
    .sum(downloadsByDayKey(["all"], day), 1n)
    .sum(downloadsByDayKey(["project", download.projectId], day), 1n)
    .sum(downloadsByDayKey(["release", download.releaseId], day), 1n)
    .sum(keyDownloadsKey(download.keyId), 1n)
    .commit();
}

/** A day's downloads, oldest day first. */
export interface DailyDownloads {
  day: string;
  downloads: number;
}

/**
 * Downloads per UTC day for the last `days` days up to and including today
 * (`until`), days without downloads as 0: one range read of the day keys.
 */
/** The last `days` days, up to and including the day of `until` (now unless given). */
export interface DaysOptions {
  days: number;
  until?: Date;
}

export async function getDailyDownloads(
  store: Store,
  scope: DownloadScope,
  { days, until = new Date() }: DaysOptions,
): Promise<DailyDownloads[]> {
  const dayList = lastDays(days, until);
  const counts = new Map<string, number>();
  const prefix = downloadsByDayPrefix(scope);
  for await (
    const entry of store.kv.list<Deno.KvU64>({
      start: [...prefix, dayList[0]],
      end: [...prefix, `${dayList[dayList.length - 1]}\u0000`],
    })
  ) {
    counts.set(String(entry.key[entry.key.length - 1]), Number(entry.value.value));
  }
  return dayList.map((day) => ({ day, downloads: counts.get(day) ?? 0 }));
}

/** Downloads of each release over the last `days` days, by release id. */
export async function getRecentDownloadCounts(
  store: Store,
  releaseIds: readonly number[],
  { days, until }: DaysOptions,
): Promise<Map<number, number>> {
  const counts = await getRecentDownloadCountsByWindow(store, releaseIds, {
    windows: [days],
    until,
  });
  return new Map([...counts].map(([id, [count]]) => [id, count]));
}

/**
 * Downloads of each release over each of `windows` (days up to `until`), by
 * release id: one range read per release, of the longest window.
 */
export async function getRecentDownloadCountsByWindow(
  store: Store,
  releaseIds: readonly number[],
  { windows, until = new Date() }: { windows: readonly number[]; until?: Date },
): Promise<Map<number, number[]>> {
  const longest = Math.max(...windows);
  const series = await Promise.all(
    releaseIds.map((id) => getDailyDownloads(store, ["release", id], { days: longest, until })),
  );
  const sumOfLast = (daily: DailyDownloads[], days: number) =>
    daily.slice(daily.length - days).reduce((sum, { downloads }) => sum + downloads, 0);
  return new Map(
    releaseIds.map((id, i) => [id, windows.map((days) => sumOfLast(series[i], days))]),
  );
}

/** The keys with the most downloads, most first; keys without downloads are left out. */
export async function getTopKeysByDownloads(
  store: Store,
  limit: number,
): Promise<Array<{ keyId: number; downloads: number }>> {
  const top: Array<{ keyId: number; downloads: number }> = [];
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: keyDownloadsPrefix() })) {
    const downloads = Number(entry.value.value);
    if (downloads > 0) top.push({ keyId: Number(entry.key[1]), downloads });
  }
  return top.sort((a, b) => b.downloads - a.downloads || a.keyId - b.keyId).slice(0, limit);
}

/** The dashboard's top keys as last computed (`["meta", "top_keys"]`). */
export interface TopKeysSnapshot {
  at: string;
  top: Array<{ keyId: number; downloads: number }>;
}

/** A refresh that has not finished after this long is taken over. */
const TOP_KEYS_REFRESH_STALE_MS = 60_000;

/**
 * The keys with the most downloads, as of at most `maxAgeMs` ago: a page
 * reads one stored snapshot. A stale snapshot is recomputed in the
 * background (`getTopKeysByDownloads`, which reads every key's counter) by
 * the one instance that holds the refresh's lease (leases.ts); the very
 * first computation, and any while the snapshot is empty (cheap: no key has
 * a counter), are waited for, so that a page never says "no downloads"
 * beside a chart that counts some. Download counting stays a blind `sum`,
 * so it never conflicts.
 */
export async function getTopKeys(
  store: Store,
  { limit, maxAgeMs }: { limit: number; maxAgeMs: number },
): Promise<TopKeysSnapshot["top"]> {
  const stored = (await store.kv.get<TopKeysSnapshot>(topKeysKey())).value;
  // An empty snapshot is as good as none: the first download shows at once.
  const snapshot = stored?.top.length === 0 ? null : stored;
  if (snapshot !== null && Date.now() - Date.parse(snapshot.at) <= maxAgeMs) {
    return snapshot.top.slice(0, limit);
  }
  const holder = crypto.randomUUID();
  if (!await claimLease(store, "top_keys_refresh", { holder, ttlMs: TOP_KEYS_REFRESH_STALE_MS })) {
    return snapshot?.top.slice(0, limit) ?? [];
  }
  const refresh = (async () => {
    try {
      const at = new Date().toISOString();
      const top = await getTopKeysByDownloads(store, limit);
      await releaseLease(store, "top_keys_refresh", {
        holder,
        also: (op) => op.set(topKeysKey(), { at, top } satisfies TopKeysSnapshot),
      });
      return top;
    } catch (error) {
      // The next page tries again.
      await releaseLease(store, "top_keys_refresh", { holder }).catch(() => {});
      throw error;
    }
  })();
  if (snapshot === null) return await refresh;
  refresh.catch(() => {});
  return snapshot.top.slice(0, limit);
}

/** "2026-03-01" for any time that day (UTC). */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The `days` UTC days ending with the day of `until`, oldest first. */
export function lastDays(days: number, until: Date): string[] {
  const end = Date.UTC(until.getUTCFullYear(), until.getUTCMonth(), until.getUTCDate());
  return Array.from(
    { length: days },
    (_, i) => utcDay(new Date(end - (days - 1 - i) * 86_400_000)),
  );
}
