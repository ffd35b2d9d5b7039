/**
 * Leases: one instance at a time runs a piece of background work (a
 * project's retention run, the SHA-512 backfill, the aggregates build, the
 * top-keys refresh). A lease is an entry `["leases", ...name]` naming its
 * holder and when it runs out; it is claimed with a checked commit, renewed
 * by its holder claiming it again, given back by its holder, and free for
 * anyone once it has run out (its holder died or stalled). The entry is also
 * written with `expireIn`, so the KV drops it on its own; until it does, the
 * time in it decides.
 */
import { retryWhileLocked } from "./atomic.ts";
import { leaseKey, type LeaseName } from "./keys.ts";
import type { Store } from "./store.ts";

/** What a lease entry holds. */
export interface Lease {
  holder: string;
  /** When it runs out, in ms since the epoch. */
  until: number;
}

export interface LeaseOptions {
  /** Who claims it (an instance id, a random id per run). */
  holder: string;
  /** How long it holds without being claimed again. */
  ttlMs: number;
}

function heldByOther(lease: Lease | null, holder: string, nowMs: number): boolean {
  return lease !== null && lease.holder !== holder && lease.until > nowMs;
}

/**
 * Claims the lease `name` for `holder` for `ttlMs`, or renews it when
 * `holder` has it: false while another holder's lease runs.
 */
export async function claimLease(
  store: Store,
  name: LeaseName,
  { holder, ttlMs }: LeaseOptions,
): Promise<boolean> {
  const key = leaseKey(name);
  return await retryWhileLocked(async () => {
    const entry = await store.kv.get<Lease>(key);
    const nowMs = Date.now();
    if (heldByOther(entry.value, holder, nowMs)) return false;
    const lease: Lease = { holder, until: nowMs + ttlMs };
    const commit = await store.kv.atomic().check(entry).set(key, lease, { expireIn: ttlMs })
      .commit();
    return commit.ok;
  });
}

/**
 * Gives the lease `name` back unless another holder has it now (it ran out
 * and was taken over); `also` adds writes that go in the same commit (the
 * result of the work). Returns whether it committed.
 */
export async function releaseLease(
  store: Store,
  name: LeaseName,
  { holder, also }: {
    holder: string;
    also?: (op: Deno.AtomicOperation) => Deno.AtomicOperation;
  },
): Promise<boolean> {
  const key = leaseKey(name);
  return await retryWhileLocked(async () => {
    const entry = await store.kv.get<Lease>(key);
    if (heldByOther(entry.value, holder, Date.now())) return false;
    const op = store.kv.atomic().check(entry).delete(key);
    return (await (also ? also(op) : op).commit()).ok;
  });
}

/** The lease `name` as stored (running or run out), or null. */
export async function getLease(store: Store, name: LeaseName): Promise<Lease | null> {
  return (await store.kv.get<Lease>(leaseKey(name))).value;
}
