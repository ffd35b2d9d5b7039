/**
 * What differential downloads save (docs/feeds.md "What it saves"): per
 * release, the bytes the service answered for its file and block map, and
 * what whole downloads would have cost instead; per project and UTC month,
 * the same sums for the project page's line. Counters (`Deno.KvU64` sums),
 * written after the answer, like the download counts (stats.ts).
 */
import { retryWhileLocked } from "./atomic.ts";
import { projectDeliveryMonthKey, releaseDeliveryKey } from "./keys.ts";
import type { Store } from "./store.ts";

export interface DeliveryEvent {
  projectId: number;
  releaseId: number;
  /** Bytes of the answer (the file, its parts or its block map). */
  servedBytes: number;
  /** What this answer stands for in whole downloads: the file's size, or 0. */
  fullBytes: number;
  at?: Date;
}

export interface DeliveryTotals {
  served: number;
  full: number;
}

/** The UTC month of `at`, `YYYY-MM`. */
export function utcMonth(at: Date): string {
  return at.toISOString().slice(0, 7);
}

export async function recordDelivery(store: Store, event: DeliveryEvent): Promise<void> {
  const month = utcMonth(event.at ?? new Date());
  const op = store.kv.atomic();
  for (const [sum, bytes] of [["served", event.servedBytes], ["full", event.fullBytes]] as const) {
    if (bytes <= 0) continue;
    op.sum(releaseDeliveryKey(event.releaseId, sum), BigInt(bytes))
      .sum(projectDeliveryMonthKey(event.projectId, month, sum), BigInt(bytes));
  }
  await retryWhileLocked(() => op.commit());
}

async function totals(store: Store, keys: [Deno.KvKey, Deno.KvKey]): Promise<DeliveryTotals> {
  const [served, full] = await store.kv.getMany<[Deno.KvU64, Deno.KvU64]>(keys);
  return { served: Number(served.value?.value ?? 0n), full: Number(full.value?.value ?? 0n) };
}

export function getReleaseDelivery(store: Store, releaseId: number): Promise<DeliveryTotals> {
  return totals(store, [
    releaseDeliveryKey(releaseId, "served"),
    releaseDeliveryKey(releaseId, "full"),
  ]);
}

export function getProjectDeliveryMonth(
  store: Store,
  projectId: number,
  month: string,
): Promise<DeliveryTotals> {
  return totals(store, [
    projectDeliveryMonthKey(projectId, month, "served"),
    projectDeliveryMonthKey(projectId, month, "full"),
  ]);
}
