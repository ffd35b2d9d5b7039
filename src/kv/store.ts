/**
 * The store object: one per KV handle the service writes through. It holds
 * what this process keeps beside the KV: the read cache (cache.ts), its
 * blocks of ids and its write queues (atomic.ts), and, for the writes of one
 * audited request, that request's audit entry (audit.ts `auditedStore`).
 * Every store operation takes it as its first argument.
 */
import { createWriteState, type WriteState } from "./atomic.ts";
import type { PendingAudit } from "./audit.ts";
import { createReadCache, type ReadCache } from "./cache.ts";

export interface Store {
  readonly kv: Deno.Kv;
  /** What the client API reads on every request, kept in process (cache.ts). */
  readonly cache: ReadCache;
  /** Id blocks and per-project write queues (atomic.ts). */
  readonly writes: WriteState;
  /** The audited request whose changes this handle commits, if any (audit.ts). */
  readonly audit: PendingAudit | undefined;
}

export interface StoreOptions {
  /** How stale writes of other processes sharing the KV may look, in ms (APP_CACHE_REFRESH_MS). */
  cacheRefreshMs?: number;
}

/** A store over `kv`: an empty read cache, no ids claimed yet, no audited request. */
export function createStore(kv: Deno.Kv, options: StoreOptions = {}): Store {
  return {
    kv,
    cache: createReadCache(options.cacheRefreshMs),
    writes: createWriteState(),
    audit: undefined,
  };
}
