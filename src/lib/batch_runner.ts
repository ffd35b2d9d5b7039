/**
 * Runs background batches at most one a `batchMs`: `request()` asks for a
 * batch (the first one after a quiet spell starts at once, the next waits
 * for the rest of `batchMs` since the last one began); while one runs,
 * another is asked for by `pending()` when it ends. `flush` and `settle`
 * start a waiting batch at once, except after a failed one (a `run` that
 * resolves `"failed"`): the next batch then starts no sooner than `batchMs`
 * after the failure, on a timer, whoever waits for it, so a store that fails
 * at once is not tried in a loop that holds the event loop. The timer never
 * keeps the process alive (a stop calls `flush`, which waits on a timer of
 * its own). The pacing is timed with the monotonic clock (`performance.now()`),
 * so a wall clock stepped back does not hold a batch. The batching writer
 * (src/kv/batch_writer.ts) runs its batches this way.
 */

export interface BatchRunner {
  /** Asks for a batch soon; returns at once. */
  request(): void;
  /** Resolves once no batch runs or waits. */
  flush(): Promise<void>;
  /**
   * Resolves once the work waiting now is done: the batch that runs, then
   * the one that waits, started at once (at most two batches; `flush` could
   * wait for good under steady work).
   */
  settle(): Promise<void>;
}

/** What a batch ends as: `"failed"` holds the next one back for `batchMs`. */
export type BatchOutcome = void | "failed";

export function createBatchRunner(
  run: () => Promise<BatchOutcome>,
  { batchMs, pending }: {
    batchMs: number;
    /** Whether work is still waiting when a batch ends. */
    pending: () => boolean;
  },
): BatchRunner {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> | null = null;
  /** When the next batch may start (performance.now() ms). */
  let nextAt = -Infinity;
  /** Whether the last batch failed: the next one waits for `nextAt` whoever asks. */
  let failed = false;

  function request(): void {
    if (timer !== undefined || writing !== null) return;
    // Rounded up: a timer of a fraction of a ms less would start a retry before its batch time.
    const id = setTimeout(start, Math.ceil(Math.max(0, nextAt - performance.now())));
    Deno.unrefTimer(id);
    timer = id;
  }

  function start(): void {
    clearTimeout(timer);
    timer = undefined;
    failed = false;
    nextAt = performance.now() + batchMs;
    writing = run().then((outcome) => {
      if (outcome !== "failed") return;
      failed = true;
      nextAt = performance.now() + batchMs;
    }).finally(() => {
      writing = null;
      if (pending()) request();
    });
  }

  /** Starts the batch that waits: at once, or at `nextAt` after a failed one. */
  async function startWaiting(): Promise<void> {
    while (failed && writing === null && timer !== undefined && performance.now() < nextAt) {
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(nextAt - performance.now())));
    }
    if (writing === null && timer !== undefined) start();
  }

  return {
    request,
    async flush() {
      while (writing !== null || timer !== undefined) {
        if (writing === null) await startWaiting();
        if (writing !== null) await writing;
      }
    },
    async settle() {
      if (writing !== null) await writing;
      if (writing === null && timer === undefined) return;
      if (writing === null) await startWaiting();
      if (writing !== null) await writing;
    },
  };
}
