/**
 * Keeps a listener serving through faults that end a `Deno.serve`, above all
 * running out of file descriptors: a connection flood makes the accept loop
 * fail with "Too many open files (os error 24)", `server.finished` rejects and
 * nothing serves any more. Here the server is started again on the same
 * address as soon as that works (retrying with a growing pause while
 * descriptors are still short), with one warning per incident and one line
 * when it serves again.
 */

export interface ServingEvents {
  /** The server stopped on a fault; `error` is its cause. Once per incident. */
  down(error: unknown): void;
  /**
   * The incident is over (serving without a fault for INCIDENT_QUIET_MS):
   * from the fault to the last restart, and how many restarts it took.
   */
  recovered(downMs: number, restarts: number): void;
}

export interface KeptServer {
  /** Stops restarting and shuts the current server down (waits for requests in flight). */
  shutdown(): Promise<void>;
}

const FIRST_RETRY_MS = 50;
const MAX_RETRY_MS = 2_000;
/** A fault within this long after a restart belongs to the same incident. */
export const INCIDENT_QUIET_MS = 5_000;

/**
 * Runs `start()` (which calls `Deno.serve`) and starts it again whenever its
 * server ends with an error; `restarted` is true for those later starts.
 */
export function keepServing(
  start: (restarted: boolean) => Deno.HttpServer,
  events: ServingEvents,
): KeptServer {
  let server = start(false);
  let stopping = false;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let quietTimer: ReturnType<typeof setTimeout> | undefined;
  /** Start of the incident in progress, or null. */
  let incidentSince: number | null = null;
  let restarts = 0;

  const watch = (current: Deno.HttpServer) => {
    current.finished.catch((error) => {
      if (stopping) return;
      clearTimeout(quietTimer);
      if (incidentSince === null) {
        incidentSince = performance.now();
        restarts = 0;
        events.down(error);
      }
      restart(FIRST_RETRY_MS);
    });
  };

  const restart = (waitMs: number) => {
    retryTimer = setTimeout(() => {
      if (stopping) return;
      try {
        server = start(true);
      } catch {
        // Still short of descriptors (or the port is busy): try again a little later.
        return restart(Math.min(MAX_RETRY_MS, waitMs * 2));
      }
      restarts++;
      watch(server);
      const upAt = performance.now();
      quietTimer = setTimeout(() => {
        if (incidentSince === null) return;
        events.recovered(Math.round(upAt - incidentSince), restarts);
        incidentSince = null;
      }, INCIDENT_QUIET_MS);
    }, waitMs);
  };

  watch(server);
  return {
    shutdown: async () => {
      stopping = true;
      clearTimeout(retryTimer);
      clearTimeout(quietTimer);
      await server.shutdown();
    },
  };
}
