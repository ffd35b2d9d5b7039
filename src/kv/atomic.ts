import { createKeyedQueue, type KeyedQueue } from "../lib/keyed_queue.ts";
import { ConflictError, KvWriteRefusedError, writeRefusalOf } from "./errors.ts";
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
      if (!isLockedError(error)) throw refusedOr(error);
    }
    await pause(i);
  }
  throw new ConflictError();
}

/**
 * What an attempt of `commitWithRetry` (or `commitChange`, cache.ts) gives as
 * its commit when it has nothing to write: taken as done, its value handed back.
 */
export const NOTHING_TO_WRITE: Deno.KvCommitResult = { ok: true, versionstamp: "" };

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
      if (!isLockedError(error) || i >= MAX_ATTEMPTS - 1) throw refusedOr(error);
    }
    await pause(i);
  }
}

/** A write the KV refused for good (read-only, full disk) as a KvWriteRefusedError; else `error`. */
function refusedOr(error: unknown): unknown {
  const reason = writeRefusalOf(error);
  return reason === null ? error : new KvWriteRefusedError(reason, error);
}

function isLockedError(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

function pause(attempt: number): Promise<void> {
  const ms = Math.min(100, 2 ** attempt) * Math.random();
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Ids claimed at once by this process, so that writers of one kind do not collide on its counter. */
const ID_BLOCK = 32;

interface IdBlock {
  next: number;
  last: number;
}

/** What a store keeps for its writes (store.ts): its blocks of ids and its write queues. */
export interface WriteState {
  ids: Map<IdKind, IdBlock>;
  /** Claims of new blocks, one at a time per kind. */
  claims: KeyedQueue;
  /** Writes that move a project's latest pointer, one at a time per project. */
  projectWrites: KeyedQueue;
}

/** No ids claimed, no writes queued (for `createStore`). */
export function createWriteState(): WriteState {
  return { ids: new Map(), claims: createKeyedQueue(), projectWrites: createKeyedQueue() };
}

/**
 * The next `count` ids of `kind` (consecutive), without a write on the way
 * most of the time: this process claims blocks of ids from the kind's
 * counter (one checked commit per block, retried), so writers of one kind,
 * here or in other instances, never collide on the counter itself. Ids grow
 * within a process; across instances they interleave by block, and an id of
 * a block a process did not use before it stopped is never used.
 */
export async function takeIds(
  store: { readonly kv: Deno.Kv; readonly writes: WriteState },
  kind: IdKind,
  count = 1,
): Promise<number> {
  const { kv, writes: state } = store;
  return await state.claims.run(kind, async () => {
    const block = state.ids.get(kind);
    if (block !== undefined && block.last - block.next + 1 >= count) {
      const first = block.next;
      block.next += count;
      return first;
    }
    // A new block past everything claimed so far; what was left of the old one is skipped, so
    // ids stay in the order they are handed out.
    const first = await commitWithRetry(async () => {
      const counter = await kv.get<number>(counterKey(kind));
      const start = (counter.value ?? 0) + 1;
      const commit = await kv.atomic()
        .check(counter)
        .set(counterKey(kind), start + count + ID_BLOCK - 1)
        .commit();
      return { commit, value: start };
    });
    state.ids.set(kind, { next: first + count, last: first + count + ID_BLOCK - 1 });
    return first;
  })!;
}

/**
 * Runs `write` after the earlier writes of project `projectId` through this
 * store: writes that move one project's latest pointer would otherwise
 * retry on each other's commits. (KV checks still order them against other
 * instances.)
 */
export function serializedProjectWrite<T>(
  store: { readonly writes: WriteState },
  projectId: number,
  write: () => Promise<T>,
): Promise<T> {
  return store.writes.projectWrites.run(String(projectId), write)!;
}

export function now(): string {
  return new Date().toISOString();
}
