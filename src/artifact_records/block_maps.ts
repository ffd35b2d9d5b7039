/**
 * Block maps of releases (electron-updater's differential downloads,
 * src/blockmap/): the gzipped block map of a release, kept in KV in pieces
 * of at most BLOCK_MAP_PIECE_BYTES (a KV value holds 64 KiB; a 1 GiB
 * artifact's block map is about 1.5 MB), and one record per release naming
 * them and who made the map. A release gets its block map once and keeps it:
 * clients cache the installed version's, so it is never replaced. Backups
 * carry and restores import each one whole or not at all (keepWholeBlockMaps).
 */
import { commitWithRetry, NOTHING_TO_WRITE, retryWhileLocked } from "../kv/atomic.ts";
import { getManyEntries } from "../kv/get_many.ts";
import {
  blockMapKey,
  blockMapPieceKey,
  blockMapPiecesPrefix,
  blockMapsPrefix,
  releaseKey,
  releasesPrefix,
} from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export interface BlockMapRecord {
  release_id: number;
  /** Names this map's pieces (a map that lost a race to another leaves no pieces behind). */
  pieces_id: string;
  pieces: number;
  size_bytes: number;
  /** "service": built here (app-builder's chunking); "vendor": uploaded with the release. */
  made_by: "service" | "vendor";
  created_at: string;
}

/** The most bytes of a block map in one KV value. */
export const BLOCK_MAP_PIECE_BYTES = 60_000;
/** Pieces written per commit (a commit carries at most 800 KiB). */
const PIECES_PER_COMMIT = 10;

export async function getBlockMapByRelease(
  store: Store,
  releaseId: number,
): Promise<BlockMapRecord | null> {
  return (await store.kv.get<BlockMapRecord>(blockMapKey(releaseId))).value;
}

/** The gzipped block map of release `releaseId`, or null while it has none. */
export async function getBlockMapBytes(
  store: Store,
  releaseId: number,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const record = await getBlockMapByRelease(store, releaseId);
  if (record === null) return null;
  const keys = Array.from(
    { length: record.pieces },
    (_, i) => blockMapPieceKey(releaseId, record.pieces_id, i),
  );
  const entries = await getManyEntries<Uint8Array>(store.kv, keys);
  const bytes = new Uint8Array(record.size_bytes);
  let at = 0;
  for (const { value } of entries) {
    if (value === null || at + value.byteLength > bytes.byteLength) return null;
    bytes.set(value, at);
    at += value.byteLength;
  }
  return at === bytes.byteLength ? bytes : null;
}

/**
 * Stores the block map `bytes` of a release that has none: its pieces, then
 * the record in one checked commit. False (and no pieces left) when the
 * release already has one or no longer exists.
 */
export async function createBlockMap(
  store: Store,
  { releaseId, madeBy, bytes }: {
    releaseId: number;
    madeBy: BlockMapRecord["made_by"];
    bytes: Uint8Array;
  },
): Promise<boolean> {
  if (await getBlockMapByRelease(store, releaseId) !== null) return false;
  const piecesId = crypto.randomUUID();
  const pieces = Math.ceil(bytes.byteLength / BLOCK_MAP_PIECE_BYTES);
  for (let first = 0; first < pieces; first += PIECES_PER_COMMIT) {
    const op = store.kv.atomic();
    for (let i = first; i < Math.min(pieces, first + PIECES_PER_COMMIT); i++) {
      const piece = bytes.slice(i * BLOCK_MAP_PIECE_BYTES, (i + 1) * BLOCK_MAP_PIECE_BYTES);
      op.set(blockMapPieceKey(releaseId, piecesId, i), piece);
    }
    await retryWhileLocked(() => op.commit());
  }
  const record: BlockMapRecord = {
    release_id: releaseId,
    pieces_id: piecesId,
    pieces,
    size_bytes: bytes.byteLength,
    made_by: madeBy,
    created_at: new Date().toISOString(),
  };
  const created = await commitWithRetry(async () => {
    const [release, existing] = await store.kv.getMany<[unknown, BlockMapRecord]>([
      releaseKey(releaseId),
      blockMapKey(releaseId),
    ]);
    if (release.value === null || existing.value !== null) {
      return { commit: NOTHING_TO_WRITE, value: false };
    }
    const commit = await store.kv.atomic().check(release, existing)
      .set(blockMapKey(releaseId), record).commit();
    return { commit, value: true };
  });
  if (!created) await removePieces(store, releaseId, piecesId);
  return created;
}

async function removePieces(store: Store, releaseId: number, piecesId?: string): Promise<void> {
  const prefix = piecesId === undefined
    ? blockMapPiecesPrefix(releaseId)
    : [...blockMapPiecesPrefix(releaseId), piecesId];
  for await (const entry of store.kv.list({ prefix })) {
    await retryWhileLocked(() => store.kv.delete(entry.key));
  }
}

/**
 * Removes the block maps (records and pieces) of releases that no longer
 * exist; the count removed. Pieces a crashed writer left without a record go too.
 */
export async function removeOrphanBlockMaps(store: Store): Promise<number> {
  const releaseIds = new Set<number>();
  const recorded = new Map<number, string>();
  for await (const entry of store.kv.list<BlockMapRecord>({ prefix: blockMapsPrefix() })) {
    recorded.set(entry.value.release_id, entry.value.pieces_id);
  }
  const pieceOwners = new Map<number, Set<string>>();
  for await (const entry of store.kv.list({ prefix: blockMapPiecesPrefix() })) {
    const [, releaseId, piecesId] = entry.key as [string, number, string, number];
    if (!pieceOwners.has(releaseId)) pieceOwners.set(releaseId, new Set());
    pieceOwners.get(releaseId)!.add(piecesId);
  }
  const ids = [...new Set([...recorded.keys(), ...pieceOwners.keys()])];
  const entries = await getManyEntries(store.kv, ids.map(releaseKey));
  entries.forEach((entry, i) => {
    if (entry.value !== null) releaseIds.add(ids[i]);
  });
  let removed = 0;
  for (const id of ids) {
    if (!releaseIds.has(id)) {
      await retryWhileLocked(() => store.kv.delete(blockMapKey(id)));
      await removePieces(store, id);
      removed++;
      continue;
    }
    // Pieces of a map that never got its record (a crash between the two writes).
    for (const piecesId of pieceOwners.get(id) ?? []) {
      if (recorded.get(id) !== piecesId) await removePieces(store, id, piecesId);
    }
  }
  return removed;
}

/**
 * Releases (any state) with an id above `afterId` that have no block map,
 * at most `limit` looked at, by id; `lastId` is the highest id looked at
 * (the next call starts there), `afterId` when there were none. The records
 * are read as `R`, the caller's record of a release (`Release`); this reads
 * only their ids.
 */
export async function listReleasesWithoutBlockMap<R extends { id: number }>(
  store: Store,
  { afterId, limit }: { afterId: number; limit: number },
): Promise<{ releases: R[]; lastId: number }> {
  const releases: R[] = [];
  const seen: R[] = [];
  for await (
    const entry of store.kv.list<R>({
      prefix: releasesPrefix(),
      start: releaseKey(afterId + 1),
    }, {
      limit,
    })
  ) {
    seen.push(entry.value);
  }
  if (seen.length === 0) return { releases, lastId: afterId };
  const maps = await getManyEntries<BlockMapRecord>(
    store.kv,
    seen.map((release) => blockMapKey(release.id)),
  );
  seen.forEach((release, i) => {
    if (maps[i].value === null) releases.push(release);
  });
  return { releases, lastId: seen.at(-1)!.id };
}

/**
 * `records` (KV entries, in any order) with each block map kept only whole:
 * its record and every piece the record names. Pieces no record names (a
 * writer between its pieces' commits and its record's, or one that crashed
 * there) are left out, and so is a record whose pieces are not all there. A
 * backup holds these (src/backup/backup.ts) and a restore imports these
 * (src/backup/restore.ts); a map left out is built again by the restored service.
 */
export function keepWholeBlockMaps<T extends { key: Deno.KvKey; value: unknown }>(
  records: readonly T[],
): T[] {
  const [recordPrefix] = blockMapsPrefix();
  const [piecePrefix] = blockMapPiecesPrefix();
  const isRecord = (record: T) => record.key.length === 2 && record.key[0] === recordPrefix;
  const isPiece = (record: T) => record.key.length === 4 && record.key[0] === piecePrefix;
  const piecesOf = (releaseId: unknown, piecesId: unknown) => `${releaseId}\u0000${piecesId}`;
  const pieceCounts = new Map<string, number>();
  for (const record of records) {
    if (!isPiece(record)) continue;
    const [, releaseId, piecesId] = record.key;
    const owner = piecesOf(releaseId, piecesId);
    pieceCounts.set(owner, (pieceCounts.get(owner) ?? 0) + 1);
  }
  const whole = new Set<string>();
  for (const record of records) {
    if (!isRecord(record)) continue;
    const map = record.value as BlockMapRecord;
    const owner = piecesOf(record.key[1], map.pieces_id);
    if (pieceCounts.get(owner) === map.pieces) whole.add(owner);
  }
  return records.filter((record) => {
    if (isPiece(record)) return whole.has(piecesOf(record.key[1], record.key[2]));
    if (isRecord(record)) {
      return whole.has(piecesOf(record.key[1], (record.value as BlockMapRecord).pieces_id));
    }
    return true;
  });
}
