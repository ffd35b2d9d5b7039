/**
 * The responses still being sent, each with the function that ends it as
 * cut off. Owned by whoever may have to stop the process (main.ts passes one
 * to the app and calls `endAll` at the shutdown timeout); an app built
 * without one gets its own.
 */
export interface OpenResponses {
  /** Notes a response being sent; `cut` ends it as cut off. */
  add(cut: () => void): void;
  /** Forgets a response that ended. */
  delete(cut: () => void): void;
  /** How many are being sent now. */
  count(): number;
  /**
   * Ends every response still being sent as cut off: its access-log line is
   * written, marked `aborted`, and a download counts as unfinished. For the
   * shutdown timeout, just before the process exits.
   */
  endAll(): void;
}

export function createOpenResponses(): OpenResponses {
  const open = new Set<() => void>();
  return {
    add: (cut) => void open.add(cut),
    delete: (cut) => void open.delete(cut),
    count: () => open.size,
    endAll() {
      for (const cut of [...open]) cut();
    },
  };
}
