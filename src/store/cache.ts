/**
 * An in-process read cache of what the client API reads on every request:
 * keys by hash, projects, releases, latest pointers and the project list.
 * Cached records are shared objects: callers must not mutate them.
 *
 * Every write of a project, release or key goes through this store layer,
 * which starts its atomic operation with `changeOp(kv)` (adding
 * `.sum(cacheGenerationKey(), 1n)`) and commits it with `commitChange`, which
 * calls `forgetCachedReads(kv)` once the commit is done. So a key that an
 * admin disables or re-scopes in this process is refused on the very next
 * request. A read that began before such a write and finishes after it is
 * not cached (its `generation` no longer matches).
 *
 * Writes by another process sharing the KV (another instance, a restore, a
 * script) are noticed through the generation entry within
 * `APP_CACHE_REFRESH_MS` (default 100 ms). `followOtherWriters` (main.ts)
 * reads it in the background every half of that, and follows it with
 * `kv.watch`, so the request path reads no KV for it. Only when that poll is
 * late (a KV slower than half the bound) does a request wait for the read,
 * so the bound holds. 0 reads it on every request. Without
 * `followOtherWriters` (tests, tools) the request path reads it at most once
 * per bound.
 *
 * Only found records are cached: a lookup of an unknown key or slug always
 * asks the KV (such requests are rate limited per client address), so the
 * cache cannot be filled with garbage. Each map is also bounded.
 */
import { commitWithRetry } from "./atomic.ts";
import { cacheGenerationKey } from "./keys.ts";

const MAX_ENTRIES = 200_000;
/** The default of APP_CACHE_REFRESH_MS. */
export const DEFAULT_REFRESH_MS = 100;

interface ReadCache {
  /** How stale another process's writes may look, in ms. */
  refreshMs: number;
  /** Bumped by every local write; a fill started under an older one is dropped. */
  generation: number;
  /** The KV-wide generation counter as last read, or undefined before the first read. */
  seen: bigint | null | undefined;
  checkedAt: number;
  pendingCheck: Promise<void> | null;
  maps: Map<string, Map<unknown, unknown>>;
}

const caches = new WeakMap<Deno.Kv, ReadCache>();

/** How stale writes of other processes to `kv` may look, in ms (APP_CACHE_REFRESH_MS). */
export function setCacheRefreshMs(kv: Deno.Kv, ms: number): void {
  cacheOf(kv).refreshMs = ms;
}

function cacheOf(kv: Deno.Kv): ReadCache {
  let cache = caches.get(kv);
  if (cache === undefined) {
    cache = {
      refreshMs: DEFAULT_REFRESH_MS,
      generation: 0,
      seen: undefined,
      checkedAt: 0,
      pendingCheck: null,
      maps: new Map(),
    };
    caches.set(kv, cache);
  }
  return cache;
}

/** Drops every cached read of `kv`. The store calls this after each write. */
export function forgetCachedReads(kv: Deno.Kv): void {
  const cache = cacheOf(kv);
  cache.generation++;
  cache.maps.clear();
}

/** Starts an atomic operation that tells other processes the cached data changed. */
export function changeOp(kv: Deno.Kv): Deno.AtomicOperation {
  return kv.atomic().sum(cacheGenerationKey(), 1n);
}

/**
 * `commitWithRetry` for writes of cached records (whose atomic operation
 * starts with `changeOp`): the cached reads are dropped once it is done, and
 * also when it failed, since a commit may have landed before an error.
 */
export async function commitChange<T>(
  kv: Deno.Kv,
  attempt: () => Promise<{ commit: Deno.KvCommitResult | Deno.KvCommitError; value: T }>,
): Promise<T> {
  try {
    return await commitWithRetry(attempt);
  } finally {
    forgetCachedReads(kv);
  }
}

/**
 * Keeps the read cache of `kv` within `boundMs` of other processes' writes
 * without reading on the request path: polls the generation entry every
 * `boundMs / 2` and follows it with `kv.watch`, which reports other instances'
 * writes at once on a KV Connect URL (on a file it sees only this process's
 * writes, so there the poll does the work). Returns the function that stops both.
 */
export function followOtherWriters(kv: Deno.Kv, boundMs: number): () => void {
  const cache = cacheOf(kv);
  cache.refreshMs = boundMs;
  if (boundMs === 0) return () => {};
  const timer = setInterval(() => checkGeneration(kv, cache, true), Math.max(1, boundMs >> 1));
  Deno.unrefTimer(timer);
  const reader = kv.watch<[Deno.KvU64]>([cacheGenerationKey()]).getReader();
  (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      noteGeneration(kv, cache, value[0].value?.value ?? null, Date.now());
    }
  })().catch(() => {/* the poll goes on */});
  return () => {
    clearInterval(timer);
    reader.cancel().catch(() => {});
  };
}

/** Records the generation read at `readAt`, dropping the cache when another process moved it. */
function noteGeneration(kv: Deno.Kv, cache: ReadCache, value: bigint | null, readAt: number) {
  if (cache.seen !== undefined && cache.seen !== value) forgetCachedReads(kv);
  cache.seen = value;
  cache.checkedAt = Math.max(cache.checkedAt, readAt);
}

/** Makes sure writes of other processes are noticed within `refreshMs`. */
function checkGeneration(
  kv: Deno.Kv,
  cache: ReadCache,
  force = false,
): Promise<void> | undefined {
  const now = Date.now();
  if (!force && cache.seen !== undefined && now - cache.checkedAt < cache.refreshMs) {
    return undefined;
  }
  cache.pendingCheck ??= (async () => {
    try {
      const entry = await kv.get<Deno.KvU64>(cacheGenerationKey());
      noteGeneration(kv, cache, entry.value?.value ?? null, now);
    } catch {
      // Unknown whether others wrote: read everything afresh, and check again next time.
      // (If the KV is really down, those reads fail and report it.)
      forgetCachedReads(kv);
      cache.seen = undefined;
    } finally {
      cache.pendingCheck = null;
    }
  })();
  return cache.pendingCheck;
}

/**
 * A read through the cache: the value itself when the cache holds it (the
 * client API answers such a request without a turn of the event loop), else
 * a promise of it. `await` takes both; `thenRead` chains without a turn.
 */
export type Cached<T> = T | Promise<T>;

/** Calls `next` with the value of `read` at once when it is known, else once it is loaded. */
export function thenRead<T, R>(read: Cached<T>, next: (value: T) => Cached<R>): Cached<R> {
  return read instanceof Promise ? read.then(next) : next(read);
}

/**
 * The cached value of `name`/`id` (at once), or a promise of it loaded.
 * `load` results that are null are returned but not cached.
 */
export function cachedRead<K, V>(
  kv: Deno.Kv,
  name: string,
  id: K,
  load: () => Promise<V | null>,
): Cached<V | null> {
  const cache = cacheOf(kv);
  const check = checkGeneration(kv, cache);
  if (check === undefined) {
    // The hot path: no async function, no await, no promise.
    const hit = cache.maps.get(name)?.get(id) as V | undefined;
    if (hit !== undefined) return hit;
  }
  return readThrough(cache, check, name, id, load);
}

async function readThrough<K, V>(
  cache: ReadCache,
  check: Promise<void> | undefined,
  name: string,
  id: K,
  load: () => Promise<V | null>,
): Promise<V | null> {
  if (check !== undefined) await check;
  const hit = cache.maps.get(name)?.get(id) as V | undefined;
  if (hit !== undefined) return hit;
  const generation = cache.generation;
  const value = await load();
  if (value !== null && cache.generation === generation) remember(cache, name, id, value);
  return value;
}

function remember(cache: ReadCache, name: string, id: unknown, value: unknown): void {
  let map = cache.maps.get(name);
  if (map === undefined) cache.maps.set(name, map = new Map());
  else if (map.size >= MAX_ENTRIES) map.clear();
  map.set(id, value);
}
