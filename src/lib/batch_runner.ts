/**
 * Runs background batches at most one a `batchMs`: `request()` asks for a
 * batch (the first one after a quiet spell starts at once, the next waits
 * for the rest of `batchMs` since the last one began); while one runs,
 * another is asked for by `pending()` when it ends. The timer never keeps
 * the process alive (a stop calls `flush`). The batching writer
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

export function createBatchRunner(
  run: () => Promise<void>,
  { batchMs, pending }: {
    batchMs: number;
    /** Whether work is still waiting when a batch ends. */
    pending: () => boolean;
  },
): BatchRunner {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> | null = null;
  let lastBatchAt = -Infinity;

  function request(): void {
    if (timer !== undefined || writing !== null) return;
    const id = setTimeout(start, Math.max(0, lastBatchAt + batchMs - Date.now()));
    Deno.unrefTimer(id);
    timer = id;
  }

  function start(): void {
    clearTimeout(timer);
    timer = undefined;
    lastBatchAt = Date.now();
    writing = run().finally(() => {
      writing = null;
      if (pending()) request();
    });
  }

  return {
    request,
    async flush() {
      while (writing !== null || timer !== undefined) {
        if (writing === null) start();
        await writing;
      }
    },
    async settle() {
      if (writing !== null) await writing;
      if (writing === null && timer === undefined) return;
      if (writing === null) start();
      await writing;
    },
  };
}
