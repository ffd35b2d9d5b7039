/**
 * Markers made under a cap: items without a marker get one while a counter
 * (of one client address and day, say) stays within `cap`, in one commit
 * checked against the counter and every marker, so any number of instances
 * make at most `cap` markers under one counter. Each marker adds one to the
 * counters its item names (one `sum` per counter and commit). The counter
 * expires after two days, so counters that come and go do not pile up.
 */
import { commitWithRetry, NOTHING_TO_WRITE } from "./atomic.ts";
import { getManyEntries } from "./get_many.ts";

const DAY_MS = 86_400_000;

/** What a marker of an item is: its value, how long it lives, the counters it adds one to. */
export interface CappedMarker {
  value: unknown;
  expireIn: number;
  counters: Deno.KvKey[];
}

/** Items sorted by what the commit did with them. */
export interface CappedMarkersResult<T> {
  /** Marked now. */
  admitted: T[];
  /** Without a marker, past the cap: not marked. */
  past: T[];
  /** Found with a marker already: not marked again. */
  existing: T[];
}

/** Markers made per commit (a check and at most three mutations each, within KV's limits). */
const MARKERS_PER_COMMIT = 40;

/**
 * Marks the `items` without a marker while the count at `countKey` stays
 * within `cap`, `MARKERS_PER_COMMIT` a commit (checked, retried; none when
 * nothing is marked). With `unreadPastCap`, once a commit finds the cap
 * reached, the items after it are past without being read.
 */
export async function makeCappedMarkers<T>(
  kv: Deno.Kv,
  options: {
    countKey: Deno.KvKey;
    cap: number;
    items: T[];
    markerKey: (item: T) => Deno.KvKey;
    marker: (item: T) => CappedMarker;
    unreadPastCap?: boolean;
  },
): Promise<CappedMarkersResult<T>> {
  const { items, unreadPastCap = false } = options;
  const result: CappedMarkersResult<T> = { admitted: [], past: [], existing: [] };
  for (let i = 0; i < items.length; i += MARKERS_PER_COMMIT) {
    const chunk = items.slice(i, i + MARKERS_PER_COMMIT);
    if (unreadPastCap && result.past.length > 0) {
      result.past.push(...chunk);
      continue;
    }
    const { admitted, past, existing } = await markChunk(kv, { ...options, items: chunk });
    result.admitted.push(...admitted);
    result.past.push(...past);
    result.existing.push(...existing);
  }
  return result;
}

/** One commit of `makeCappedMarkers`. */
async function markChunk<T>(
  kv: Deno.Kv,
  { countKey, cap, items, markerKey, marker }: {
    countKey: Deno.KvKey;
    cap: number;
    items: T[];
    markerKey: (item: T) => Deno.KvKey;
    marker: (item: T) => CappedMarker;
  },
): Promise<CappedMarkersResult<T>> {
  return await commitWithRetry(async () => {
    const [count, ...markers] = await getManyEntries<unknown>(kv, [
      countKey,
      ...items.map(markerKey),
    ]);
    const fresh = items.filter((_, i) => markers[i].value === null);
    const existing = items.filter((_, i) => markers[i].value !== null);
    const taken = (count.value as number | null) ?? 0;
    const admitted = fresh.slice(0, Math.max(0, cap - taken));
    const past = fresh.slice(admitted.length);
    if (admitted.length === 0) {
      // Past the cap: nothing to write, so nothing to check either.
      return { commit: NOTHING_TO_WRITE, value: { admitted, past, existing } };
    }
    const op = kv.atomic().check(count);
    for (const entry of markers) if (entry.value === null) op.check(entry);
    const sums = new Map<string, { key: Deno.KvKey; added: bigint }>();
    for (const item of admitted) {
      const { value, expireIn, counters } = marker(item);
      op.set(markerKey(item), value, { expireIn });
      for (const key of counters) {
        const name = key.join(" ");
        sums.set(name, { key, added: (sums.get(name)?.added ?? 0n) + 1n });
      }
    }
    for (const { key, added } of sums.values()) op.sum(key, added);
    op.set(countKey, taken + admitted.length, { expireIn: 2 * DAY_MS });
    return { commit: await op.commit(), value: { admitted, past, existing } };
  });
}
