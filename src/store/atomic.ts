import { ConflictError } from "./errors.ts";
import { counterKey, type IdKind } from "./keys.ts";

const MAX_ATTEMPTS = 20;

/**
 * Runs `attempt` until its atomic commit succeeds. `attempt` reads what it
 * needs, builds one `kv.atomic()` with `check()`s and returns the commit's
 * result with the value to hand back. A failed check (`ok: false`) or a
 * "database is locked" error from a second process sharing the KV file is
 * retried with a short, growing, jittered pause.
 */
export async function commitWithRetry<T>(
  attempt: () => Promise<{ commit: Deno.KvCommitResult | Deno.KvCommitError; value: T }>,
): Promise<T> {
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    try {
      const { commit, value } = await attempt();
      if (commit.ok) return value;
    } catch (error) {
      if (!isLockedError(error)) throw error;
    }
    await pause(i);
  }
  throw new ConflictError();
}

/**
 * Runs a single write again while another process holds the lock of a shared
 * KV file ("database is locked"), e.g. when several instances start at once.
 * Other errors, and the write's own result, pass through unchanged.
 */
export async function retryWhileLocked<T>(write: () => Promise<T>): Promise<T> {
  for (let i = 0;; i++) {
    try {
      return await write();
    } catch (error) {
      if (!isLockedError(error) || i >= MAX_ATTEMPTS - 1) throw error;
    }
    await pause(i);
  }
}

function isLockedError(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

function pause(attempt: number): Promise<void> {
  const ms = Math.min(100, 2 ** attempt) * Math.random();
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A block of ids read from the counter of a kind, and the counter entry to `check()`. */
export interface ReservedIds {
  first: number;
  last: number;
  counter: Deno.KvEntryMaybe<number>;
}

/** Reads the id counter of `kind` and reserves the next `count` ids (one by default). */
export async function reserveIds(kv: Deno.Kv, kind: IdKind, count = 1): Promise<ReservedIds> {
  const counter = await kv.get<number>(counterKey(kind));
  const first = (counter.value ?? 0) + 1;
  return { first, last: first + count - 1, counter };
}

/**
 * Adds the claim of ids from `reserveIds` to an atomic operation: the counter
 * must be unchanged, and moves past the block.
 */
export function claimIds(
  op: Deno.AtomicOperation,
  kind: IdKind,
  ids: ReservedIds,
): Deno.AtomicOperation {
  return op.check(ids.counter).set(counterKey(kind), ids.last);
}

export function now(): string {
  return new Date().toISOString();
}
