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

function isLockedError(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

function pause(attempt: number): Promise<void> {
  const ms = Math.min(100, 2 ** attempt) * Math.random();
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Reads the id counter of `kind`: the next id, and the entry to `check()`. */
export async function readNextId(
  kv: Deno.Kv,
  kind: IdKind,
): Promise<{ id: number; counter: Deno.KvEntryMaybe<number> }> {
  const counter = await kv.get<number>(counterKey(kind));
  return { id: (counter.value ?? 0) + 1, counter };
}

/** Adds the counter bump for an id from `readNextId` to an atomic operation. */
export function claimId(
  op: Deno.AtomicOperation,
  kind: IdKind,
  next: { id: number; counter: Deno.KvEntryMaybe<number> },
): Deno.AtomicOperation {
  return op.check(next.counter).set(counterKey(kind), next.id);
}

export function now(): string {
  return new Date().toISOString();
}
