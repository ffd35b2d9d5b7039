/**
 * Graceful stop: on SIGTERM or SIGINT the servers stop accepting connections
 * and wait for in-flight requests, streamed downloads included, for at most
 * `APP_SHUTDOWN_TIMEOUT_SECONDS`; then the caller closes storage and exits 0.
 *
 * A stop signal sent to the process group (systemd's KillMode=control-group,
 * `kill -TERM -- -<pgid>`) reaches both `deno task` and the server, and
 * `deno task` passes its copy on: the server sees the same stop twice within
 * milliseconds. Only a signal more than FORCE_AFTER_MS after the first (a
 * person pressing Ctrl-C again once "stopping" is on screen) forces the exit.
 */

const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const;
export type StopSignal = typeof STOP_SIGNALS[number];

/** Signals within this long of the first are copies of it, not a request to hurry. */
export const FORCE_AFTER_MS = 1_000;

export interface StopHandlers {
  /** The first stop signal: start draining. */
  stop: (signal: StopSignal) => void;
  /** A later signal, more than FORCE_AFTER_MS after the first: exit now. */
  force: (signal: StopSignal) => void;
  /** A repeat within FORCE_AFTER_MS (a forwarded copy): ignored, for the log. */
  repeated?: (signal: StopSignal) => void;
}

/** Listens for stop signals. */
export function onStopSignals(handlers: StopHandlers): void {
  const judge = stopSignalJudge();
  for (const signal of STOP_SIGNALS) {
    try {
      Deno.addSignalListener(signal, () => handlers[judge()]?.(signal));
    } catch {
      // Not every platform has every signal (Windows has no SIGTERM listener).
    }
  }
}

/** What each successive stop signal means: the first stops, copies repeat, a late one forces. */
export function stopSignalJudge(now: () => number = Date.now): () => keyof StopHandlers {
  let firstAt: number | null = null;
  return () => {
    const at = now();
    if (firstAt === null) {
      firstAt = at;
      return "stop";
    }
    return at - firstAt > FORCE_AFTER_MS ? "force" : "repeated";
  };
}

/** Shuts the servers down; true when every in-flight request finished within `timeoutMs`. */
export async function drainServers(
  servers: readonly { shutdown(): Promise<void> }[],
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
