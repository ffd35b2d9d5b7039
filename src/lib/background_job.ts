/**
 * The timer loop of a background job (block maps, the SHA-512 backfill): a
 * first run at once, then each next one after the pause the run asks for.
 * Its timers never keep the process alive.
 */

/**
 * A background job's lease (src/kv/leases.ts) outlives a stalled holder by
 * this long; the job renews it before every artifact it reads.
 */
export const JOB_LEASE_MS = 120_000;

/** A background job's service events. */
export type JobReport = (
  level: "info" | "warn",
  message: string,
  fields?: Record<string, string | number>,
) => void;

/**
 * Runs `run` at once, then again after the milliseconds it returns (null:
 * not again), until stopped. `run` reports its own failures and does not
 * throw. Returns the function that stops it.
 */
export function scheduleJob(run: () => Promise<number | null>): () => void {
  let stopped = false;
  const next = (delayMs: number) => {
    const timer = setTimeout(tick, delayMs);
    Deno.unrefTimer(timer);
    return timer;
  };
  const tick = async () => {
    const delayMs = await run();
    if (delayMs !== null && !stopped) timer = next(delayMs);
  };
  let timer = next(0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
