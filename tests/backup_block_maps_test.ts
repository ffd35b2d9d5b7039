/** A backup holds each block map whole or not at all, even one taken while a map is written. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createBackup } from "../src/backup/backup.ts";
import { restoreBackup } from "../src/backup/restore.ts";
import { decodeRecord } from "../src/backup/codec.ts";
import { hashFile, KV_FILE, MANIFEST_FILE } from "../src/backup/format.ts";
import {
  BLOCK_MAP_PIECE_BYTES,
  createBlockMap,
  getBlockMapByRelease,
  getBlockMapBytes,
  keepWholeBlockMaps,
} from "../src/artifact_records/block_maps.ts";
import { blockMapKey, blockMapPieceKey, blockMapPiecesPrefix, projectKey } from "../src/kv/keys.ts";
import { createStore, type Store } from "../src/kv/store.ts";
import { dataLocation, openDataDir } from "./data_dir_fixtures.ts";

/** `kv` whose first getMany waits for `gate` after telling `reached`. */
function pausedAtFirstGetMany(kv: Deno.Kv, reached: () => void, gate: Promise<void>): Deno.Kv {
  let paused = false;
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "getMany" && !paused) {
        paused = true;
        return async (...args: Parameters<Deno.Kv["getMany"]>) => {
          reached();
          await gate;
          return target.getMany(...args);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Restores `backup` into `dir` and runs `check` on its KV. */
async function restoredInto(
  backup: string,
  dir: string,
  check: (kv: Deno.Kv, store: Store) => Promise<void>,
) {
  await restoreBackup(backup, dataLocation(dir));
  const kv = await Deno.openKv(join(dir, "kv.sqlite3"));
  try {
    await check(kv, createStore(kv));
  } finally {
    kv.close();
  }
}

/** The keys of the block map pieces `kv` holds for a release. */
async function piecesOf(kv: Deno.Kv, releaseId: number): Promise<Deno.KvKey[]> {
  const keys = [];
  for await (const entry of kv.list({ prefix: blockMapPiecesPrefix(releaseId) })) {
    keys.push(entry.key);
  }
  return keys;
}

Deno.test("a backup holds each block map whole or not at all", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "uds-backup-block-maps-" });
  const source = join(root, "source");
  const fx = await openDataDir(source);
  const project = await fx.project({ name: "Desktop", slug: "desktop" });
  const done = await fx.release(project.id, "1.0.0", new TextEncoder().encode("first"));
  const writing = await fx.release(project.id, "2.0.0", new TextEncoder().encode("second"));
  // Two pieces each: more than one KV value per map.
  const doneBytes = crypto.getRandomValues(new Uint8Array(BLOCK_MAP_PIECE_BYTES + 1_000));
  const writingBytes = crypto.getRandomValues(new Uint8Array(BLOCK_MAP_PIECE_BYTES + 2_000));
  assert.equal(
    await createBlockMap(fx.store, { releaseId: done.id, madeBy: "vendor", bytes: doneBytes }),
    true,
  );

  await t.step("taken between a map's pieces and its record, it holds neither", async () => {
    // createBlockMap commits the pieces, then reads before committing the record: held there.
    const reached = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    const paused = createStore(pausedAtFirstGetMany(fx.kv, reached.resolve, gate.promise));
    const created = createBlockMap(paused, {
      releaseId: writing.id,
      madeBy: "service",
      bytes: writingBytes,
    });
    await reached.promise;
    const pieces = [];
    for await (const entry of fx.kv.list({ prefix: blockMapPiecesPrefix(writing.id) })) {
      pieces.push(entry.key);
    }
    assert.equal(pieces.length, 2, "the pieces are in the KV, the record not yet");
    const backup = join(root, "backup");
    try {
      await createBackup(dataLocation(source), backup);
    } finally {
      gate.resolve();
    }
    assert.equal(await created, true);
    assert.deepEqual(await getBlockMapBytes(fx.store, writing.id), writingBytes);

    await restoredInto(backup, join(root, "restored"), async (kv, restored) => {
      assert.deepEqual(await getBlockMapBytes(restored, done.id), doneBytes);
      assert.equal(await getBlockMapByRelease(restored, writing.id), null);
      assert.deepEqual(await piecesOf(kv, writing.id), [], "no piece of the map being written");
    });
  });

  await t.step("a backup holding part of a map restores without it", async () => {
    const backup = join(root, "backup-half");
    await createBackup(dataLocation(source), backup);
    // A backup made before backups kept maps whole: one piece of the first map is missing.
    const kvFile = join(backup, KV_FILE);
    const lines = (await Deno.readTextFile(kvFile)).split("\n").filter((line) => line !== "");
    const kept = lines.filter((line) => {
      const { key } = decodeRecord(line);
      return String(key) !== String(blockMapPieceKey(done.id, String(key[2]), 1));
    });
    assert.equal(kept.length, lines.length - 1);
    await Deno.writeTextFile(kvFile, kept.join("\n") + "\n");
    const manifestFile = join(backup, MANIFEST_FILE);
    const manifest = JSON.parse(await Deno.readTextFile(manifestFile));
    manifest.kv.entries = kept.length;
    manifest.kv.sha256 = (await hashFile(kvFile)).sha256;
    await Deno.writeTextFile(manifestFile, JSON.stringify(manifest));

    await restoredInto(backup, join(root, "restored-half"), async (kv, restored) => {
      assert.equal(await getBlockMapByRelease(restored, done.id), null);
      assert.deepEqual(await piecesOf(kv, done.id), [], "no piece of the half map");
      assert.deepEqual(await getBlockMapBytes(restored, writing.id), writingBytes);
    });
  });

  await t.step("a record whose pieces are not all there is left out with them", () => {
    const record = (releaseId: number, piecesId: string, pieces: number) => ({
      key: blockMapKey(releaseId),
      value: { release_id: releaseId, pieces_id: piecesId, pieces },
    });
    const piece = (releaseId: number, piecesId: string, i: number) => ({
      key: blockMapPieceKey(releaseId, piecesId, i),
      value: new Uint8Array([i]),
    });
    const other = { key: projectKey(1), value: { id: 1 } };
    const whole = [piece(1, "a", 0), piece(1, "a", 1), record(1, "a", 2)];
    const newer = [piece(3, "c", 0), record(3, "c", 1)];
    // Release 2's record names two pieces, one is there; release 3 has pieces no record names.
    const partial = [piece(2, "b", 0), record(2, "b", 2), piece(3, "old", 0)];
    const kept = keepWholeBlockMaps([...partial, ...whole, other, ...newer]);
    assert.deepEqual(kept, [...whole, other, ...newer]);
  });

  fx.close();
  await Deno.remove(root, { recursive: true });
});
