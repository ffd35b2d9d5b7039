/**
 * Generic export and import of KV entries, for backup and restore.
 *
 * A `kv.list()` is not one snapshot: each page is read at its own moment, so
 * a commit that lands while the list runs can be seen half. `snapshotEntries`
 * therefore lists everything again and again until two passes in a row
 * return the same keys with the same versionstamps. Every commit that touched
 * a listed key between the two passes would have changed a versionstamp, so
 * the last pass holds, for every multi-key commit, either all of its writes or
 * none. Entries under `BACKUP_VOLATILE_PREFIXES` (download counters, last use
 * of keys: single-key writes) are not required to hold still.
 */
import { commitWithRetry } from "./atomic.ts";
import { BACKUP_SKIPPED_PREFIXES, BACKUP_VOLATILE_PREFIXES } from "./keys.ts";
import type { Store } from "./store.ts";

export interface KvRecord {
  key: Deno.KvKey;
  value: unknown;
}

/** The data kept changing for `passes` full passes: no consistent snapshot. */
export class SnapshotUnstableError extends Error {
  constructor(readonly passes: number) {
    super(`the data kept changing during ${passes} passes; try again when the service is quieter`);
    this.name = "SnapshotUnstableError";
  }
}

function hasPrefix(key: Deno.KvKey, prefixes: readonly Deno.KvKey[]): boolean {
  return prefixes.some((prefix) =>
    prefix.length <= key.length && prefix.every((part, i) => samePart(part, key[i]))
  );
}

function samePart(a: Deno.KvKeyPart, b: Deno.KvKeyPart): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((byte, i) => byte === b[i]);
  }
  return typeof a === typeof b && a === b;
}

/** A text that tells keys apart (types included), for comparing passes. */
function keyText(key: Deno.KvKey): string {
  return key.map((part) =>
    part instanceof Uint8Array
      ? `u8:${Array.from(part).join(",")}`
      : `${typeof part}:${String(part)}`
  ).join("\u0000");
}

/** Every entry a backup copies, in key order (one `kv.list`, not a snapshot). */
export async function* exportEntries(store: Store): AsyncGenerator<Deno.KvEntry<unknown>> {
  for await (const entry of store.kv.list({ prefix: [] }, { batchSize: 500 })) {
    if (!hasPrefix(entry.key, BACKUP_SKIPPED_PREFIXES)) yield entry;
  }
}

/** A consistent copy of every exported entry (see the module comment). */
export async function snapshotEntries(
  store: Store,
  maxPasses = 10,
): Promise<{ records: KvRecord[]; passes: number }> {
  let previous: string[] | null = null;
  for (let pass = 1; pass <= maxPasses; pass++) {
    const records: KvRecord[] = [];
    const fingerprint: string[] = [];
    for await (const entry of exportEntries(store)) {
      records.push({ key: entry.key, value: entry.value });
      if (!hasPrefix(entry.key, BACKUP_VOLATILE_PREFIXES)) {
        fingerprint.push(`${keyText(entry.key)}@${entry.versionstamp}`);
      }
    }
    if (previous !== null && sameList(previous, fingerprint)) return { records, passes: pass };
    previous = fingerprint;
  }
  throw new SnapshotUnstableError(maxPasses);
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

/** True when the KV holds no entry at all. */
export async function isKvEmpty(store: Store): Promise<boolean> {
  for await (const _ of store.kv.list({ prefix: [] }, { limit: 1 })) return false;
  return true;
}

// Deno KV allows 1000 mutations and 800 KiB per atomic commit; stay well below.
const BATCH_ENTRIES = 200;
const BATCH_BYTES = 300_000;

/**
 * Writes records into an empty KV in batched atomic commits. Returns how many
 * were written. Meant for a restore into a KV no one else uses yet.
 */
export async function importEntries(
  store: Store,
  records: AsyncIterable<KvRecord> | Iterable<KvRecord>,
): Promise<number> {
  let batch: KvRecord[] = [];
  let bytes = 0;
  let written = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const current = batch;
    await commitWithRetry(async () => {
      const op = store.kv.atomic();
      for (const record of current) op.set(record.key, record.value);
      return { commit: await op.commit(), value: undefined };
    });
    written += current.length;
    batch = [];
    bytes = 0;
  };
  for await (const record of records) {
    const size = approximateSize(record.key) + approximateSize(record.value);
    if (batch.length >= BATCH_ENTRIES || bytes + size > BATCH_BYTES) await flush();
    batch.push(record);
    bytes += size;
  }
  await flush();
  return written;
}

/** A generous estimate of a value's serialized size in bytes. */
function approximateSize(value: unknown): number {
  if (typeof value === "string") return 8 + value.length * 3;
  if (value instanceof Uint8Array) return 8 + value.byteLength;
  if (value instanceof Map) {
    let size = 8;
    for (const [k, v] of value) size += approximateSize(k) + approximateSize(v);
    return size;
  }
  if (value instanceof Set || Array.isArray(value)) {
    let size = 8;
    for (const item of value) size += approximateSize(item);
    return size;
  }
  if (value !== null && typeof value === "object" && !(value instanceof Date)) {
    let size = 8;
    for (const [k, v] of Object.entries(value)) size += approximateSize(k) + approximateSize(v);
    return size;
  }
  return 24; // numbers, bigints, booleans, null, dates, KvU64
}
