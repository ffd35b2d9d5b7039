/**
 * Graceful stop: on SIGTERM or SIGINT the servers stop accepting connections
 * and wait for in-flight requests, streamed downloads included, for at most
 * `APP_SHUTDOWN_TIMEOUT_SECONDS`; then the caller closes storage and exits 0.
 * A second signal while draining stops at once (exit 1).
 */

const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const;
export type StopSignal = typeof STOP_SIGNALS[number];

/** Calls `onStop` on the first stop signal and `onForce` on any later one. */
export function onStopSignals(
  onStop: (signal: StopSignal) => void,
  onForce: (signal: StopSignal) => void,
): void {
  let stopping = false;
  for (const signal of STOP_SIGNALS) {
    try {
      Deno.addSignalListener(signal, () => {
        if (stopping) return onForce(signal);
        stopping = true;
        onStop(signal);
      });
    } catch {
      // Not every platform has every signal (Windows has no SIGTERM listener).
    }
  }
}

/** Shuts the servers down; true when every in-flight request finished within `timeoutMs`. */
export async function drainServers(
  servers: readonly Deno.HttpServer[],
  timeoutMs: number,
): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const drained = Promise.all(servers.map((server) => server.shutdown())).then(() => true);
  try {
    return await Promise.race([drained, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
