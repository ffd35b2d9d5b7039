/**
 * One page of a KV list, read from a cursor (keyset paging): a page reads
 * its rows and at most `maxScan` entries in all, however long the list is.
 * Used by the admin lists (keys, a project's releases, projects), whose
 * search filters the entries it reads and says where to search on.
 */
import { getManyEntries } from "./get_many.ts";

/** Where a page starts: after or before (in display order) the entry with this key. */
export interface PageCursor {
  after?: Deno.KvKey;
  before?: Deno.KvKey;
}

/** What a caller of a `list…Page` function asks for; cursors as `CursorPage` gave them. */
export interface PageRequest<T> {
  limit: number;
  cursor: { after?: string; before?: string };
  maxScan: number;
  /** Only rows that match (a search); all when absent. */
  match?: (row: T) => boolean;
}

/** A page for a caller: rows in display order, cursors (URL-safe text) to go on with. */
export interface CursorPage<T> {
  rows: T[];
  after: string | null;
  before: string | null;
  scanLimited: boolean;
}

/**
 * `scanPage` with the cursors as text: `parts` are the types of the key parts
 * after `prefix` (an unreadable cursor reads as none: the first page).
 */
export async function cursorPage<V, T>(
  kv: Deno.Kv,
  request: Omit<ScanRequest<V, T>, "cursor"> & {
    cursor: { after?: string; before?: string };
    parts: ReadonlyArray<"string" | "number">;
  },
): Promise<CursorPage<T>> {
  const { prefix, parts } = request;
  const after = decodeCursor(prefix, parts, request.cursor.after);
  const before = after === undefined
    ? decodeCursor(prefix, parts, request.cursor.before)
    : undefined;
  const page = await scanPage(kv, { ...request, cursor: { after, before } });
  const text = (key: Deno.KvKey | null) => key === null ? null : encodeCursor(prefix, key);
  return {
    rows: page.rows.map(({ row }) => row),
    after: text(page.after),
    before: text(page.before),
    scanLimited: page.scanLimited,
  };
}

/**
 * `cursorPage` of an index whose entries hold record ids: each batch's records
 * (`recordKey` of each id) read at once, the gone and those `match` refuses
 * left out.
 */
export function indexPage<T>(
  kv: Deno.Kv,
  { match, recordKey, ...request }: PageRequest<T> & {
    prefix: Deno.KvKey;
    reverse: boolean;
    parts: ReadonlyArray<"string" | "number">;
    recordKey: (id: number) => Deno.KvKey;
  },
): Promise<CursorPage<T>> {
  return cursorPage<number, T>(kv, {
    ...request,
    load: async (entries) =>
      (await getManyEntries<T>(kv, entries.map((entry) => recordKey(entry.value))))
        .map(({ value }) => value !== null && (match?.(value) ?? true) ? value : null),
  });
}

export interface ScanRequest<V, T> {
  prefix: Deno.KvKey;
  /** Display order is the KV's reverse order (newest id first). */
  reverse: boolean;
  limit: number;
  cursor: PageCursor;
  /** Entries read at most (a search that finds few stops here and says where it got to). */
  maxScan: number;
  /** The rows of a batch of entries, null for one that does not match (or is gone). */
  load: (entries: Deno.KvEntry<V>[]) => Promise<(T | null)[]>;
}

export interface ScannedPage<T> {
  /** In display order, with the key of the entry each came from. */
  rows: Array<{ key: Deno.KvKey; row: T }>;
  /** Where to go on (display order) for the next and the previous page; null at the end. */
  after: Deno.KvKey | null;
  before: Deno.KvKey | null;
  /** The scan stopped at `maxScan` before filling the page (a search that found few). */
  scanLimited: boolean;
}

const BATCH = 100;

export async function scanPage<V, T>(
  kv: Deno.Kv,
  request: ScanRequest<V, T>,
): Promise<ScannedPage<T>> {
  const { prefix, limit, maxScan, cursor } = request;
  const backward = cursor.after === undefined && cursor.before !== undefined;
  // KV order of the scan: display order, or its opposite when paging back.
  const reverse = request.reverse !== backward;
  const from = backward ? cursor.before : cursor.after;
  const selector: Deno.KvListSelector = from === undefined
    ? { prefix }
    : reverse
    ? { prefix, end: from }
    : { prefix, start: [...from, ""] };
  const rows: Array<{ key: Deno.KvKey; row: T }> = [];
  let scanned = 0;
  let lastKey: Deno.KvKey | null = null;
  let more = false;
  let batch: Deno.KvEntry<V>[] = [];
  const take = async () => {
    const loaded = await request.load(batch);
    for (let i = 0; i < batch.length; i++) {
      const row = loaded[i];
      if (row === null) continue;
      if (rows.length === limit) {
        more = true;
        return;
      }
      rows.push({ key: batch[i].key, row });
    }
    lastKey = batch[batch.length - 1].key;
    batch = [];
  };
  const iterator = kv.list<V>(selector, { reverse, batchSize: Math.min(BATCH, maxScan) });
  for await (const entry of iterator) {
    batch.push(entry);
    scanned++;
    if (batch.length === BATCH || scanned >= maxScan) {
      await take();
      if (more || scanned >= maxScan) break;
    }
  }
  if (!more && batch.length > 0) await take();
  const stopped = !more && scanned >= maxScan;
  const scanLimited = stopped && rows.length < limit;
  // The key to continue from in the scan's direction, when there may be more.
  const resume = more ? rows[rows.length - 1].key : stopped ? lastKey : null;
  if (backward) {
    rows.reverse();
    return {
      rows,
      before: resume,
      after: rows.length > 0 ? rows[rows.length - 1].key : null,
      scanLimited,
    };
  }
  return {
    rows,
    after: resume,
    before: from !== undefined && rows.length > 0 ? rows[0].key : null,
    scanLimited,
  };
}

/** A cursor's key parts after `prefix`, for a URL (base64url of JSON). */
export function encodeCursor(prefix: Deno.KvKey, key: Deno.KvKey): string {
  const json = JSON.stringify(key.slice(prefix.length));
  return btoa(String.fromCharCode(...new TextEncoder().encode(json)))
    .replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

/** The key of a cursor made by `encodeCursor`, or undefined when it is not one of `parts` parts. */
export function decodeCursor(
  prefix: Deno.KvKey,
  parts: ReadonlyArray<"string" | "number">,
  raw: string | undefined,
): Deno.KvKey | undefined {
  if (raw === undefined || raw.length > 2000 || !/^[A-Za-z0-9_-]+$/.test(raw)) return undefined;
  try {
    const binary = atob(raw.replaceAll("-", "+").replaceAll("_", "/"));
    const value: unknown = JSON.parse(
      new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))),
    );
    if (!Array.isArray(value) || value.length !== parts.length) return undefined;
    const kinds: string[] = value.map((part) => typeof part);
    if (kinds.some((kind, i) => kind !== parts[i])) return undefined;
    if (value.some((part) => typeof part === "number" && !Number.isSafeInteger(part))) {
      return undefined;
    }
    return [...prefix, ...value];
  } catch {
    return undefined;
  }
}
