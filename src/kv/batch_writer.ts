/**
 * A batching writer: takes items off the request path and writes them in
 * the background, many at once. `add` only puts an item into this
 * instance's pending map under its key (an item whose key is waiting
 * already is merged into it, the newer one winning by default) and returns;
 * past `maxPending` items waiting, a new key's item goes into the overflow
 * instead (the configuration's `overflow`, a sketch). In the background the
 * whole pending map and overflow are taken as one batch and handed to
 * `write`, at most one batch a `batchMs` (src/lib/batch_runner.ts); what
 * arrives meanwhile waits for the next.
 *
 * The failure policy: a batch that could not be written is tried again
 * while its items are younger than `RETRY_MS` (a minute), no sooner than
 * `batchMs` after the failure, also under `flush` and `settle`; an item
 * whose key was queued again meanwhile is merged with the newer one (as
 * `merge` would merge them on `add`) and keeps the newer one's time, so a
 * key queued again restarts its minute (a client still asking restarts it);
 * one of a new key is kept while there is room (`maxPending`). A failure
 * whose items go back in the queue is logged as `could not record <what>
 * (tried once more)` with the error; items dropped (older than a minute, or
 * no room) are logged as `dropped N <what> that could not be written for a
 * minute` (or `(no room to wait)`). Its overflow is not tried again (a
 * sketch is an estimate; logged as dropped). `write` gets the same
 * `requeue` to keep an item for one more batch itself.
 */
import { createBatchRunner } from "../lib/batch_runner.ts";

/** An item of the pending map, with when it was added (ms, by the writer's clock). */
export interface Queued<T> {
  item: T;
  at: number;
}

/** One batch as handed to the write. */
export interface Batch<T, Overflow> {
  items: Queued<T>[];
  /** What went past `maxPending` since the last batch, as the configuration's `overflow` made it. */
  overflow: Map<string, Overflow>;
  /**
   * Takes `queued` into the next batch: false when there is no room; true
   * when it is taken or merged into the item of its key that waits already
   * (`merge(queued, waiting)`: the waiting one is the newer).
   */
  requeue(queued: Queued<T>): boolean;
}

export interface BatchWriterOptions<T, Overflow> {
  /** What the items are, in the log: `could not record <what> (tried once more)`, `dropped N <what> ...`. */
  what: string;
  /** The pending map's key of an item: one item a key waits. */
  keyOf(item: T): string;
  /**
   * The item kept when `item` is added while `waiting` has its key, or when
   * `waiting` failed to be written and the newer `item` has been queued since
   * (default: `item`, which it may change). It must not add `waiting`'s
   * values to `item`'s: a failed batch may have been written in part, and a
   * write skips what is already recorded, so it may only keep what `item`
   * lacks (such as a flag).
   */
  merge?(waiting: T, item: T): T;
  /** Takes `item`, past `maxPending`, into `overflow` (or drops it). */
  overflow(overflow: Map<string, Overflow>, item: T, at: number): void;
  /** Writes one batch; a rejection is the failure the policy above answers. */
  write(batch: Batch<T, Overflow>): Promise<void>;
  /** Items waiting for the writer; past this, a new key's item goes into the overflow (default 10,000). */
  maxPending?: number;
  /** The least time between the starts of two batches, in ms (default 1,000). */
  batchMs?: number;
  /** The clock, in ms (when an item was added, and its age after a failed batch). */
  now?: () => number;
  /** Called once per batch that could not be written. */
  onKvError?: () => void;
}

export interface BatchWriter<T> {
  /** Queues `item`; returns at once. */
  add(item: T): void;
  /**
   * Resolves once every item added so far is written or given up (tests,
   * shutdown); with a store that keeps failing, once the policy drops them
   * (a minute, one try a `batchMs`).
   */
  flush(): Promise<void>;
  /** Resolves once the items waiting now are written (at most two batches, however busy). */
  settle(): Promise<void>;
}

/** The items of a batch that could not be written are tried again while younger than this, in ms. */
export const RETRY_MS = 60_000;

export function createBatchWriter<T, Overflow>(
  options: BatchWriterOptions<T, Overflow>,
): BatchWriter<T> {
  const {
    what,
    keyOf,
    merge = (_waiting: T, item: T) => item,
    overflow: addToOverflow,
    write,
    maxPending = 10_000,
    batchMs = 1_000,
    now = Date.now,
    onKvError = () => {},
  } = options;
  let pending = new Map<string, Queued<T>>();
  let overflow = new Map<string, Overflow>();

  /** Puts `queued` back: merged into the item of its key that waits, else kept while there is room. */
  function requeue(queued: Queued<T>): boolean {
    const key = keyOf(queued.item);
    const waiting = pending.get(key);
    if (waiting !== undefined) {
      pending.set(key, { item: merge(queued.item, waiting.item), at: waiting.at });
      return true;
    }
    if (pending.size >= maxPending) return false;
    pending.set(key, queued);
    return true;
  }

  const runner = createBatchRunner(async () => {
    const items = [...pending.values()];
    const parts = overflow;
    pending = new Map();
    overflow = new Map();
    try {
      await write({ items, overflow: parts, requeue });
    } catch (error) {
      onKvError();
      // A write that went through before the failure is not repeated: the
      // write skips what is already recorded.
      const since = now() - RETRY_MS;
      let old = 0;
      let full = 0;
      for (const queued of items) {
        if (queued.at <= since) old++;
        else if (!requeue(queued)) full++;
      }
      const kept = items.length - old - full;
      if (kept > 0) console.error(`could not record ${what} (tried once more):`, error);
      if (old > 0) {
        console.error(`dropped ${old} ${what} that could not be written for a minute:`, error);
      }
      if (full > 0) {
        console.error(
          `dropped ${full} ${what} that could not be written (no room to wait):`,
          error,
        );
      }
      if (parts.size > 0) {
        console.error(`dropped the estimate of ${what} past the queue (not tried again):`, error);
      }
      return "failed";
    }
  }, { batchMs, pending: () => pending.size > 0 || overflow.size > 0 });

  return {
    add(item) {
      const at = now();
      const key = keyOf(item);
      const waiting = pending.get(key);
      if (waiting !== undefined) {
        pending.set(key, { item: merge(waiting.item, item), at });
      } else if (pending.size < maxPending) {
        pending.set(key, { item, at });
      } else {
        addToOverflow(overflow, item, at);
      }
      runner.request();
    },
    flush: runner.flush,
    settle: runner.settle,
  };
}
