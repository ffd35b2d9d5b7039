/**
 * The HyperLogLog sketches kept in KV, one per UTC day and what it counts
 * (adoption_batch.ts, reports.ts): clients past an address's new-id cap, reports not counted.
 */
import { createSketch, mergeSketch } from "../lib/hyperloglog.ts";
import { DAY_MS } from "./adoption.ts";
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import type { Store } from "../kv/store.ts";

/**
 * Takes `sketch` into the stored sketch at `key` (one checked commit, none
 * when nothing changes). The stored sketch lives as long as a marker of its
 * UTC `day` would: until `keptDays` after that day, and a day at least.
 */
export async function mergeStoredSketch(
  store: Store,
  { key, sketch, day, keptDays }: {
    key: Deno.KvKey;
    sketch: Uint8Array;
    day: number;
    keptDays: number;
  },
): Promise<void> {
  const expireIn = Math.max(DAY_MS, (day + keptDays) * DAY_MS - Date.now());
  await commitWithRetry(async () => {
    const entry = await store.kv.get<Uint8Array>(key);
    const stored = entry.value ?? createSketch();
    if (!mergeSketch(stored, sketch)) {
      return { commit: NOTHING_TO_WRITE, value: 0 };
    }
    return {
      commit: await store.kv.atomic().check(entry).set(key, stored, { expireIn }).commit(),
      value: 0,
    };
  });
}
