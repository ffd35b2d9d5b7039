/**
 * What differential downloads save (docs/feeds.md "What it saves"): per
 * release, the bytes the service answered for its file and block map, and
 * what whole downloads would have cost instead; per project and UTC month,
 * the same sums for the project page's line. Counters (`Deno.KvU64` sums),
 * written after the answer, like the download counts (stats.ts).
 *
 * An update counts once in "what whole downloads would have cost": a
 * differential attempt (the latest release's block map, or a server-made
 * delta or patch to a release) leaves a mark per client for
 * `ATTEMPT_KEPT_MS`; a further differential attempt by that client within
 * that time (the block map after a patch that failed) counts its bytes as
 * sent and its size not again, and so does a whole download, the attempt's
 * fallback (the mark is taken).
 */
import { commitWithRetry } from "../kv/atomic.ts";
import { deliveryAttemptKey, projectDeliveryMonthKey, releaseDeliveryKey } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export interface DeliveryEvent {
  projectId: number;
  releaseId: number;
  /** Bytes of the answer (the file, its parts or its block map). */
  servedBytes: number;
  /** What this answer stands for in whole downloads: the file's size, or 0. */
  fullBytes: number;
  /**
   * For an answer that stands for a whole download: whether it starts a
   * differential update (`differential`) or is the whole file (`whole`), and
   * the client (install id, else key and address).
   */
  attempt?: { kind: "differential" | "whole"; client: string };
  at?: Date;
}

/** How long after a differential attempt a whole download by the same client is its fallback. */
export const ATTEMPT_KEPT_MS = 3_600_000;
/** A client name longer than this is cut (KV keys are bounded). */
const CLIENT_MAX_LENGTH = 300;

export interface DeliveryTotals {
  served: number;
  full: number;
}

/** The UTC month of `at`, `YYYY-MM`. */
export function utcMonth(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/**
 * Adds an answer to the sums; returns the whole-download bytes it counted
 * (`fullBytes`, or 0 for the fallback of a differential attempt).
 */
export async function recordDelivery(store: Store, event: DeliveryEvent): Promise<number> {
  const month = utcMonth(event.at ?? new Date());
  const nowMs = (event.at ?? new Date()).getTime();
  const { attempt } = event;
  const mark = attempt === undefined || event.fullBytes <= 0
    ? null
    : deliveryAttemptKey(event.releaseId, attempt.client.slice(0, CLIENT_MAX_LENGTH));
  return await commitWithRetry(async () => {
    const op = store.kv.atomic();
    let full = event.fullBytes;
    if (mark !== null && attempt?.kind === "whole") {
      const entry = await store.kv.get<number>(mark);
      op.check(entry);
      // Expired marks may still be read for a while: their time says.
      if (entry.value !== null && entry.value > nowMs) {
        full = 0;
        op.delete(mark);
      }
    } else if (mark !== null) {
      // A second attempt by the client (a patch that failed, then the block map) is one update.
      const entry = await store.kv.get<number>(mark);
      op.check(entry);
      if (entry.value !== null && entry.value > nowMs) full = 0;
      op.set(mark, nowMs + ATTEMPT_KEPT_MS, { expireIn: ATTEMPT_KEPT_MS });
    }
    for (const [sum, bytes] of [["served", event.servedBytes], ["full", full]] as const) {
      if (bytes <= 0) continue;
      op.sum(releaseDeliveryKey(event.releaseId, sum), BigInt(bytes))
        .sum(projectDeliveryMonthKey(event.projectId, month, sum), BigInt(bytes));
    }
    return { commit: await op.commit(), value: full };
  });
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
