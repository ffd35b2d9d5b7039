/**
 * An in-process read cache of what the client API reads on every request:
 * keys by hash, projects, releases, latest pointers and the project list.
 * Cached records are shared objects: callers must not mutate them.
 *
 * A write forgets only the entries it changes. Every write of a project,
 * release or key goes through this store layer, which starts its atomic
 * operation with `changeOp(store, changed)`: it names the entries the write
 * changes, adds a change record `["cache_changes", …]` listing them (kept a
 * minute) and bumps the generation counter `["meta", "generation"]` with a
 * `sum` (which never conflicts). `commitChange` forgets those entries here
 * once the commit is done, so a key that an admin disables is refused on the
 * very next request, and every other cached entry stays.
 *
 * Other processes sharing the KV (instances, a restore, a script) learn of
 * the write within `APP_CACHE_REFRESH_MS` (default 100 ms): `followOtherWriters`
 * (main.ts) reads the generation every half of that, in the background, and
 * when it moved reads the change records since its last look and forgets
 * what they name. Only when the records cannot account for the whole move
 * (a write older than the records kept, or a writer that names no entries)
 * does it forget everything. Without `followOtherWriters` (tests, tools) the
 * request path looks at most once per bound; 0 looks on every request.
 *
 * A write may instead bring an entry up to date here (`ChangeAttempt.patches`:
 * a project write puts the project into the cached project list), so that one
 * edit does not make the next read load all 5,000 projects. Other processes
 * do the same for a list read with `refresh`: when a change record names the
 * list and the items of it that changed (`["project", 7]`), they read those
 * items again instead of the whole list. A process skips its own change
 * records when it follows the generation: it forgot (or patched) their
 * entries at the commit.
 *
 * Concurrent misses of one entry share one load. A load that began before a
 * write of its entry finishes is returned but not cached.
 *
 * Only found records are cached: a lookup of an unknown key or slug always
 * asks the KV (such requests are rate limited per client address), so the
 * cache cannot be filled with garbage. Each map is also bounded.
 *
 * The cache belongs to the store object (store.ts): one per KV handle the
 * process writes through.
 */
import { commitWithRetry } from "./atomic.ts";
import { auditInCommit, type PendingAudit } from "./audit.ts";
import { cacheChangeKey, cacheChangesPrefix, cacheGenerationKey } from "./keys.ts";

const MAX_ENTRIES = 200_000;
/** The default of APP_CACHE_REFRESH_MS. */
export const DEFAULT_REFRESH_MS = 100;
/** How long change records are kept for other processes. */
const CHANGES_KEPT_MS = 60_000;
/** How far back of its last look a process reads change records (commits land after they are made). */
const CHANGES_OVERLAP_MS = 10_000;

/** A cached read by kind and id (`["project", 7]`), or every entry of a kind (`["project_list"]`). */
export type CacheEntryName =
  | readonly ["project" | "project_by_slug" | "release" | "latest_release", unknown]
  | readonly ["api_key_by_hash", string]
  | readonly ["project_list"];

/** What a write changes: some entries, or (bulk writes, restores) anything. */
export type CacheChange = readonly CacheEntryName[] | "all";

export interface ReadCache {
  /** How stale another process's writes may look, in ms. */
  refreshMs: number;
  /** Per entry, bumped by each write of it here or elsewhere: a load started under an older one is not kept. */
  versions: Map<string, number>;
  /** Bumped when everything is forgotten. */
  epoch: number;
  maps: Map<string, Map<unknown, unknown>>;
  /** Loads in flight, shared by concurrent misses. */
  loading: Map<string, Promise<unknown>>;
  /** The KV-wide generation counter as last read, or undefined before the first read. */
  seen: bigint | null | undefined;
  checkedAt: number;
  pendingCheck: Promise<void> | null;
  /** The versionstamp of the generation entry as last read: the commit last accounted for. */
  seenStamp: string | null;
  /** The time of the last look at the change records. */
  lookedAt: number;
  /** Starts the id of this cache's change records: its own are not forgotten twice (patches stay). */
  writer: string;
  /** By kind: how a cached list is brought up to date with the items another process changed. */
  refreshers: Map<string, ListRefresh<unknown> & { id: unknown }>;
}

/**
 * What the read cache is used through: the KV, its cache, and the audited
 * request whose entry a change carries (the store, store.ts, is one).
 */
export interface CachedKv {
  readonly kv: Deno.Kv;
  readonly cache: ReadCache;
  readonly audit: PendingAudit | undefined;
}

/** An empty read cache (for `createStore`). */
export function createReadCache(refreshMs = DEFAULT_REFRESH_MS): ReadCache {
  return {
    refreshMs,
    versions: new Map(),
    epoch: 0,
    maps: new Map(),
    loading: new Map(),
    seen: undefined,
    checkedAt: 0,
    pendingCheck: null,
    seenStamp: null,
    lookedAt: Date.now(),
    writer: crypto.randomUUID(),
    refreshers: new Map(),
  };
}

/** How stale writes of other processes to the store's KV may look, in ms (APP_CACHE_REFRESH_MS). */
export function setCacheRefreshMs(store: CachedKv, ms: number): void {
  store.cache.refreshMs = ms;
}

function slotOf(name: string, id: unknown): string {
  return `${name}\u0000${String(id)}`;
}

/** Forgets the entries `change` names (all of them for "all"). */
function forget(cache: ReadCache, change: CacheChange): void {
  if (change === "all") {
    cache.epoch++;
    cache.maps.clear();
    cache.loading.clear();
    cache.versions.clear();
    return;
  }
  for (const [name, id] of change.map((entry) => [entry[0], entry[1]] as const)) {
    if (id === undefined) {
      // A whole kind: the list reads.
      cache.maps.delete(name);
      for (const slot of cache.loading.keys()) {
        if (slot.startsWith(`${name}\u0000`)) cache.loading.delete(slot);
      }
      bump(cache, slotOf(name, "*"));
      continue;
    }
    cache.maps.get(name)?.delete(id);
    const slot = slotOf(name, id);
    cache.loading.delete(slot);
    bump(cache, slot);
  }
}

function bump(cache: ReadCache, slot: string): void {
  cache.versions.set(slot, (cache.versions.get(slot) ?? 0) + 1);
  if (cache.versions.size > MAX_ENTRIES) {
    // Past the bound, start over the safe way: nothing cached, nothing in flight kept.
    forget(cache, "all");
  }
}

/**
 * Starts an atomic operation that records `changed` for every process: the
 * generation moves and a change record names the entries. A store of an
 * audited request (audit.ts `auditedStore`) adds that request's audit entry.
 */
export function changeOp(store: CachedKv, changed: CacheChange): Deno.AtomicOperation {
  const at = Date.now();
  const id = `${store.cache.writer}.${crypto.randomUUID()}`;
  const op = store.kv.atomic()
    .sum(cacheGenerationKey(), 1n)
    .set(cacheChangeKey(at, id), changed, { expireIn: CHANGES_KEPT_MS });
  auditInCommit(
    op,
    store.audit,
    changed === "all" ? "everything" : changed.map((entry) => entry.join(" ")).join(", "),
  );
  return op;
}

/** One attempt of a change: its commit, what it gives back, and what it changed (as `changeOp` was told). */
export interface ChangeAttempt<T> {
  commit: Deno.KvCommitResult | Deno.KvCommitError;
  value: T;
  changed: CacheChange;
  /** Entries of `changed` that this process brings up to date itself instead of loading again. */
  patches?: readonly CachePatch[];
}

/**
 * A cached entry a write changes in a way the writer can apply (the project
 * list with one project replaced): after the commit, its cached value (if
 * any) becomes `update(value)`. Other processes forget it, or refresh it (`Read.refresh`).
 */
export interface CachePatch {
  name: string;
  id: unknown;
  update: (value: unknown) => unknown;
}

/**
 * `commitWithRetry` for writes of cached records (whose atomic operation
 * starts with `changeOp`): the entries the write changed are forgotten here
 * once it is done. When it failed everything is forgotten, since a commit
 * may have landed before an error.
 */
export async function commitChange<T>(
  store: CachedKv,
  attempt: () => Promise<ChangeAttempt<T>>,
): Promise<T> {
  let changed: CacheChange = "all";
  let patches: readonly CachePatch[] = [];
  try {
    return await commitWithRetry(async () => {
      const result = await attempt();
      if (result.commit.ok) [changed, patches] = [result.changed, result.patches ?? []];
      return result;
    });
  } finally {
    const { cache } = store;
    // Read just before forgetting (no await between): the values as every earlier write left them.
    const kept = patches.map((patch) => ({
      patch,
      value: cache.maps.get(patch.name)?.get(patch.id),
    }));
    forget(cache, changed);
    for (const { patch, value } of kept) {
      if (value !== undefined) remember(cache, patch, patch.update(value));
    }
  }
}

/**
 * Keeps the read cache of `store` within `boundMs` of other processes' writes
 * without reading on the request path: polls the generation entry every
 * `boundMs / 2` and follows it with `kv.watch`, which reports other instances'
 * writes at once on a KV Connect URL (on a file it sees only this process's
 * writes, so there the poll does the work). Returns the function that stops both.
 */
export function followOtherWriters(store: CachedKv, boundMs: number): () => void {
  const { kv, cache } = store;
  cache.refreshMs = boundMs;
  if (boundMs === 0) return () => {};
  const timer = setInterval(() => checkGeneration(kv, cache, true), Math.max(1, boundMs >> 1));
  Deno.unrefTimer(timer);
  const reader = kv.watch<[Deno.KvU64]>([cacheGenerationKey()]).getReader();
  (async () => {
    for (;;) {
      const { done } = await reader.read();
      if (done) return;
      checkGeneration(kv, cache, true);
    }
  })().catch(() => {/* the poll goes on */});
  return () => {
    clearInterval(timer);
    reader.cancel().catch(() => {});
  };
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
      const value = entry.value?.value ?? null;
      if (cache.seen === undefined) {
        // The first look: whatever is cached was read after it began.
        cache.seen = value;
        cache.seenStamp = entry.versionstamp;
        cache.lookedAt = now;
      } else if (cache.seen !== value) {
        await applyChanges(kv, cache, { value, versionstamp: entry.versionstamp, now });
      }
      cache.checkedAt = Math.max(cache.checkedAt, now);
    } catch {
      // Unknown whether others wrote: read everything afresh, and check again next time.
      // (If the KV is really down, those reads fail and report it.)
      forget(cache, "all");
      cache.seen = undefined;
    } finally {
      cache.pendingCheck = null;
    }
  })();
  return cache.pendingCheck;
}

/**
 * Forgets what the change records since the last look name. A change op
 * commits its record and the generation's `sum` together, so both carry the
 * same versionstamp: the records of the commits since the last look are
 * exactly those stamped after the generation as seen then and up to it as
 * read now. When fewer are found than the generation moved (a record that
 * expired, a writer that kept none), everything is forgotten.
 */
async function applyChanges(
  kv: Deno.Kv,
  cache: ReadCache,
  { value, versionstamp, now }: { value: bigint | null; versionstamp: string | null; now: number },
): Promise<void> {
  const moved = Number((value ?? 0n) - (cache.seen ?? 0n));
  const found: CacheChange[] = [];
  const since = cache.lookedAt - CHANGES_OVERLAP_MS;
  // Newest first, and no further than the `moved` records sought: they are nearly always the
  // last few of the window, so a look costs what changed since the last one, not the whole
  // window (which at hundreds of writes a second is thousands of records, each look).
  const records = moved <= 0 ? [] : kv.list<CacheChange>({
    start: cacheChangeKey(since, ""),
    end: [...cacheChangesPrefix(), Number.MAX_SAFE_INTEGER],
  }, { reverse: true, batchSize: Math.min(moved + 16, 500) });
  for await (const entry of records) {
    const stamp = entry.versionstamp;
    const afterSeen = cache.seenStamp === null || stamp > cache.seenStamp;
    if (afterSeen && versionstamp !== null && stamp <= versionstamp) {
      // This cache's own writes were forgotten (or patched) at their commit.
      const own = String(entry.key.at(-1)).startsWith(`${cache.writer}.`);
      found.push(own ? [] : entry.value);
      // Each change commits one record and one step of the generation: all are found.
      if (found.length === moved) break;
    }
  }
  if (moved <= 0 || found.length !== moved) {
    forget(cache, "all");
  } else {
    const refreshing = new Map<string, Set<unknown>>();
    for (const change of found) forget(cache, withoutRefreshed(cache, change, refreshing));
    await refreshLists(cache, refreshing);
  }
  cache.seen = value;
  cache.seenStamp = versionstamp;
  cache.lookedAt = now;
}

/**
 * `change` without the whole-list entries this cache can refresh instead of
 * forgetting (a list read with `refresh`, the change naming which of its items
 * changed): those items' ids go to `refreshing`, by list.
 */
function withoutRefreshed(
  cache: ReadCache,
  change: CacheChange,
  refreshing: Map<string, Set<unknown>>,
): CacheChange {
  if (change === "all") return change;
  return change.filter((entry) => {
    const refresher = entry.length === 1 ? cache.refreshers.get(entry[0]) : undefined;
    if (refresher === undefined) return true;
    const items = change.filter((other) => other[0] === refresher.itemKind && other.length === 2);
    if (items.length === 0) return true;
    const ids = refreshing.get(entry[0]) ?? new Set();
    for (const item of items) ids.add(item[1]);
    refreshing.set(entry[0], ids);
    return false;
  });
}

/**
 * Brings each cached list of `refreshing` up to date by reading only its
 * changed items (one project, not all 5,000, after another instance's edit).
 * A list that a write of this process replaced meanwhile, or whose refresh
 * failed, is forgotten instead.
 */
async function refreshLists(cache: ReadCache, refreshing: Map<string, Set<unknown>>) {
  for (const [name, ids] of refreshing) {
    const refresher = cache.refreshers.get(name)!;
    const value = cache.maps.get(name)?.get(refresher.id);
    if (value === undefined) continue;
    const listSlot = slotOf(name, "*");
    const before = [cache.epoch, cache.versions.get(listSlot)];
    let next: unknown;
    try {
      next = await refresher.apply(value, [...ids]);
    } catch {
      next = undefined;
    }
    const unchanged = before[0] === cache.epoch && before[1] === cache.versions.get(listSlot) &&
      cache.maps.get(name)?.get(refresher.id) === value;
    forget(cache, [[name] as unknown as CacheEntryName]);
    if (unchanged && next !== undefined) remember(cache, { name, id: refresher.id }, next);
  }
}

/**
 * The cached value of `name`/`id` (at once), or a promise of it loaded;
 * concurrent misses share one load. `load` results that are null are
 * returned but not cached.
 */
export function cachedRead<V>(store: CachedKv, read: Read<V>): MaybeAsync<V | null> {
  const { name, id } = read;
  const { cache } = store;
  const check = checkGeneration(store.kv, cache);
  if (check === undefined) {
    // The hot path: no async function, no await, no promise.
    const hit = cache.maps.get(name)?.get(id) as V | undefined;
    if (hit !== undefined) return hit;
  }
  return readThrough(cache, check, read);
}

/** A read through the cache: its kind, its id within the kind, and how to load it. */
export interface Read<V> {
  name: string;
  id: unknown;
  load: () => Promise<V | null>;
  /** For a list: how to bring it up to date when another process changed some of its items. */
  refresh?: ListRefresh<V>;
}

/** How a cached list takes the changes of its items another process made. */
export interface ListRefresh<V> {
  /** The kind of entry (`["project", id]`) that names a changed item in a change record. */
  itemKind: string;
  /** The list with the items of `ids` read again (removed when gone). */
  apply: (list: V, ids: unknown[]) => Promise<V>;
}

async function readThrough<V>(
  cache: ReadCache,
  check: Promise<void> | undefined,
  read: Read<V>,
): Promise<V | null> {
  const { name, id } = read;
  if (check !== undefined) await check;
  const hit = cache.maps.get(name)?.get(id) as V | undefined;
  if (hit !== undefined) return hit;
  const slot = slotOf(name, id);
  const pending = cache.loading.get(slot) as Promise<V | null> | undefined;
  if (pending !== undefined) return await pending;
  const loaded: Promise<V | null> = loadAndKeep(cache, read, slot).finally(() => {
    if (cache.loading.get(slot) === loaded) cache.loading.delete(slot);
  });
  cache.loading.set(slot, loaded);
  return await loaded;
}

/** Loads `read` and caches what it found, unless its entry was written meanwhile. */
async function loadAndKeep<V>(cache: ReadCache, read: Read<V>, slot: string): Promise<V | null> {
  const listSlot = slotOf(read.name, "*");
  const before = [cache.epoch, cache.versions.get(slot), cache.versions.get(listSlot)];
  const value = await read.load();
  const unchanged = before[0] === cache.epoch && before[1] === cache.versions.get(slot) &&
    before[2] === cache.versions.get(listSlot);
  if (value !== null && unchanged) {
    remember(cache, read, value);
    if (read.refresh !== undefined) {
      cache.refreshers.set(
        read.name,
        { ...read.refresh, id: read.id } as ListRefresh<unknown> & {
          id: unknown;
        },
      );
    }
  }
  return value;
}

function remember<V>(cache: ReadCache, read: Pick<Read<V>, "name" | "id">, value: V): void {
  let map = cache.maps.get(read.name);
  if (map === undefined) cache.maps.set(read.name, map = new Map());
  else if (map.size >= MAX_ENTRIES) map.clear();
  map.set(read.id, value);
}

/**
 * A read through the cache: the value itself when the cache holds it (the
 * client API answers such a request without a turn of the event loop), else
 * a promise of it. `await` takes both; `thenRead` chains without a turn.
 */
export type MaybeAsync<T> = T | Promise<T>;

/** Calls `next` with the value of `read` at once when it is known, else once it is loaded. */
export function thenRead<T, R>(
  read: MaybeAsync<T>,
  next: (value: T) => MaybeAsync<R>,
): MaybeAsync<R> {
  return read instanceof Promise ? read.then(next) : next(read);
}
