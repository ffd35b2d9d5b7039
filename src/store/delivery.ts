/**
 * What differential downloads save (docs/feeds.md "What it saves"): per
 * release, the bytes the service answered for its file and block map, and
 * what whole downloads would have cost instead; per project and UTC month,
 * the same sums for the project page's line. Counters (`Deno.KvU64` sums),
 * written after the answer, like the download counts (stats.ts).
 */
import { retryWhileLocked } from "./atomic.ts";

/** Which sum: bytes answered, or bytes whole downloads would have cost. */
export type DeliverySum = "served" | "full";

/** `["delivery_bytes", releaseId, sum]`: Deno.KvU64. */
export function releaseDeliveryKey(releaseId: number, sum: DeliverySum): Deno.KvKey {
  return ["delivery_bytes", releaseId, sum];
}

/** `["delivery_bytes_by_month", projectId, "YYYY-MM", sum]`: Deno.KvU64. */
export function projectDeliveryMonthKey(
  projectId: number,
  month: string,
  sum: DeliverySum,
): Deno.KvKey {
  return ["delivery_bytes_by_month", projectId, month, sum];
}

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

export async function recordDelivery(kv: Deno.Kv, event: DeliveryEvent): Promise<void> {
  const month = utcMonth(event.at ?? new Date());
  const op = kv.atomic();
  for (const [sum, bytes] of [["served", event.servedBytes], ["full", event.fullBytes]] as const) {
    if (bytes <= 0) continue;
    op.sum(releaseDeliveryKey(event.releaseId, sum), BigInt(bytes))
      .sum(projectDeliveryMonthKey(event.projectId, month, sum), BigInt(bytes));
  }
  await retryWhileLocked(() => op.commit());
}

async function totals(kv: Deno.Kv, keys: [Deno.KvKey, Deno.KvKey]): Promise<DeliveryTotals> {
  const [served, full] = await kv.getMany<[Deno.KvU64, Deno.KvU64]>(keys);
  return { served: Number(served.value?.value ?? 0n), full: Number(full.value?.value ?? 0n) };
}

export function getReleaseDelivery(kv: Deno.Kv, releaseId: number): Promise<DeliveryTotals> {
  return totals(kv, [
    releaseDeliveryKey(releaseId, "served"),
    releaseDeliveryKey(releaseId, "full"),
  ]);
}

export function getProjectDeliveryMonth(
  kv: Deno.Kv,
  projectId: number,
  month: string,
): Promise<DeliveryTotals> {
  return totals(kv, [
    projectDeliveryMonthKey(projectId, month, "served"),
    projectDeliveryMonthKey(projectId, month, "full"),
  ]);
}
