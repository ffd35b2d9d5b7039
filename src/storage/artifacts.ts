/**
 * The `fs` backend's files under `$APP_DATA_DIR/artifacts/`. Bytes are streamed to a
 * temporary file while SHA-256, SHA-512 and size are computed (constant memory, no
 * second read), fsynced, then renamed into place (and the directory fsynced,
 * so the new name survives a crash). Only after that does the
 * caller commit a release record (`publishRelease` in publish.ts). `fs_store.ts`
 * puts these functions behind the `ArtifactStore` interface.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { readDirEntries } from "../lib/files.ts";
import { STORAGE_KEY_PATTERN } from "../lib/limits.ts";
import { createPrivateFile, makePrivateDir } from "../lib/private_files.ts";
import { Sha512Pass } from "./sha512_pass.ts";
import {
  type ByteSource,
  EmptyUploadError,
  StorageFullError,
  type StoredArtifact,
  UploadTooLargeError,
} from "./types.ts";

/** Upload parts are named `.upload-<uuid>.part` while they are written. */
const PART_PATTERN = /^\.upload-[0-9a-f-]{36}\.part$/;

/** How much an artifact may hold, and under which key it is stored (a new random one unless given). */
export interface SaveArtifactOptions {
  maxBytes: number;
  storageKey?: string;
}

/** Writes `stream` to `dir` as `storageKey` (a new random one unless given) through a locked part. */
export async function saveArtifact(
  dir: string,
  stream: ByteSource,
  options: SaveArtifactOptions,
): Promise<StoredArtifact> {
  const { artifact, lock } = await saveArtifactLocked(dir, stream, options);
  lock.close();
  return artifact;
}

/**
 * Like {@link saveArtifact}, but the exclusive lock the part was written under
 * stays on the finished file: `lock` is its open handle, and closing it lets
 * the orphan sweep judge the file (see {@link claimArtifact}). The caller
 * closes it once the release is committed or the file removed.
 */
export async function saveArtifactLocked(
  dir: string,
  stream: ByteSource,
  { maxBytes, storageKey = crypto.randomUUID() }: SaveArtifactOptions,
): Promise<{ artifact: StoredArtifact; lock: Deno.FsFile }> {
  await makePrivateDir(dir);
  const tempPath = join(dir, `.upload-${crypto.randomUUID()}.part`);
  const finalPath = join(dir, storageKey);
  const writer = await ArtifactWriter.create(tempPath);
  let size = 0;
  let renamed = false;
  try {
    for await (const chunk of stream) {
      size += chunk.byteLength;
      if (size > maxBytes) throw new UploadTooLargeError(maxBytes);
      await writer.write(chunk);
    }
    if (size === 0) throw new EmptyUploadError();
    await writer.finish();
    // Renamed while still locked: a sweep never sees an unlocked live part,
    // nor an unlocked file whose release is not committed yet.
    await Deno.rename(tempPath, finalPath);
    renamed = true;
    await syncDirectory(dir);
  } catch (error) {
    await writer.abort();
    await Deno.remove(renamed ? finalPath : tempPath).catch(() => {});
    throw isStorageFull(error) ? new StorageFullError(error) : error;
  }
  const artifact = { storage_key: storageKey, ...writer.digests(), size_bytes: size };
  return { artifact, lock: writer.keepLock() };
}

/** ENOSPC (disk full) or EDQUOT (quota exceeded), from a write, an fsync or the rename. */
function isStorageFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT" ||
    (error instanceof Error && /\(os error (28|122)\)/.test(error.message));
}

/** A part younger than this may have been created but not yet locked by its writer. */
export const PART_GRACE_MS = 5_000;

/**
 * Removes upload parts whose writer is gone. A writer holds an exclusive lock
 * on its part from just after creating it until it is renamed or removed, and
 * the kernel drops the lock when the writer dies (kill -9 included), so a part
 * whose lock can be taken has no writer in any process or instance sharing the
 * directory. Parts younger than PART_GRACE_MS are left for the next sweep.
 * Returns the number removed.
 */
export async function sweepAbandonedParts(dir: string, nowMs = Date.now()): Promise<number> {
  let removed = 0;
  for (const entry of await readDirEntries(dir)) {
    if (!entry.isFile || !PART_PATTERN.test(entry.name)) continue;
    const path = join(dir, entry.name);
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true, write: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      throw error;
    }
    try {
      const { mtime } = await file.stat();
      if (mtime !== null && nowMs - mtime.getTime() < PART_GRACE_MS) continue;
      if (!await file.tryLock(true)) continue;
      await Deno.remove(path).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
      removed++;
    } finally {
      file.close();
    }
  }
  return removed;
}

/**
 * Every complete artifact file in `dir` (named by a storage key, so never an
 * upload part), with its last modification time.
 */
export async function* listArtifactFiles(
  dir: string,
): AsyncIterable<{ storageKey: string; at: Date }> {
  for (const entry of await readDirEntries(dir)) {
    if (!entry.isFile || !STORAGE_KEY_PATTERN.test(entry.name)) continue;
    try {
      const { mtime } = await Deno.stat(join(dir, entry.name));
      yield { storageKey: entry.name, at: mtime ?? new Date() };
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}

/**
 * Takes the exclusive lock of an artifact file, or null when its writer (an
 * upload whose release is not committed yet, in any process on this host)
 * still holds it, or the file is gone. The writer keeps the lock from creating
 * the part until its release is committed or the file removed, and the kernel
 * drops it when the writer dies (kill -9 included): so once this succeeds, the
 * file's release is committed (and visible to a KV read made after this), or
 * it never will be.
 */
export async function claimArtifact(
  dir: string,
  storageKey: string,
): Promise<{ release(): void } | null> {
  if (!STORAGE_KEY_PATTERN.test(storageKey)) return null;
  let file: Deno.FsFile;
  try {
    file = await Deno.open(join(dir, storageKey), { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
  try {
    if (await file.tryLock(true)) return { release: () => file.close() };
  } catch (error) {
    file.close();
    throw error;
  }
  file.close();
  return null;
}

/**
 * Makes a rename durable: without an fsync of the directory, a crash soon
 * after could lose the new name while the release record already points at it.
 */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.sync();
  } finally {
    handle.close();
  }
}

/** Chunks are gathered into blocks of this size: fewer, larger writes. */
const BLOCK_BYTES = 1024 * 1024;
/**
 * One block fills while the others wait for or are being written and hashed;
 * eight also cover the start of the SHA-512 worker (sha512_pass.ts).
 */
const BLOCKS = 8;
/** Written bytes after which a background fdatasync is started. */
const EARLY_SYNC_BYTES = 64 * 1024 * 1024;

/**
 * Writes a new file fast and in constant memory (BLOCKS * BLOCK_BYTES):
 *
 * - chunks are copied into blocks, so the caller may reuse a chunk as soon as
 *   `write` resolves and the file sees few large writes;
 * - writes run off the JavaScript thread, one after the other, while the next
 *   chunks are read and each block is hashed (SHA-256 of what is written; the
 *   SHA-512 of a large upload in a worker, `Sha512Pass`, beside the write);
 * - every EARLY_SYNC_BYTES a background fdatasync through a second handle
 *   (which, unlike the writing handle, does not queue behind the writes) gets
 *   the disk busy early, so the final fsync in `finish` has little left.
 *
 * `finish` resolves only once every byte is written and fsynced.
 */
class ArtifactWriter {
  readonly #hash = createHash("sha256");
  /** SHA-512 beside it, in the same pass (the updater feeds' checksum, src/feeds/). */
  readonly #sha512 = new Sha512Pass();
  #sha512Digest = "";
  readonly #free: Uint8Array[] = [];
  readonly #queued: Array<{ block: Uint8Array; done: Promise<unknown> }> = [];
  #blocks = 1;
  #block: Uint8Array = sharedBlock();
  #filled = 0;
  /** The last write queued; each write starts when the one before has ended. */
  #tail: Promise<void> = Promise.resolve();
  #unsynced = 0;
  #syncHandle: Deno.FsFile | null = null;
  #syncRunning = false;
  #lastSync: Promise<void> = Promise.resolve();
  #syncError: { error: unknown } | null = null;
  #closed = false;

  private constructor(private readonly path: string, private readonly file: Deno.FsFile) {}

  /** Creates the part file and holds an exclusive lock on it until it is closed (see sweep). */
  static async create(path: string): Promise<ArtifactWriter> {
    const file = await createPrivateFile(path);
    try {
      await file.lock(true);
    } catch (error) {
      file.close();
      await Deno.remove(path).catch(() => {});
      throw error;
    }
    return new ArtifactWriter(path, file);
  }

  /** Takes a copy of `chunk`; the caller may reuse it once this resolves. */
  async write(chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.byteLength) {
      const take = Math.min(chunk.byteLength - offset, BLOCK_BYTES - this.#filled);
      this.#block.set(chunk.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
      if (this.#filled === BLOCK_BYTES) await this.#submit();
    }
  }

  /** Writes what is left, waits for every write and fsyncs; the file stays open (and locked). */
  async finish(): Promise<void> {
    if (this.#filled > 0) await this.#submit();
    await this.#tail;
    await this.#lastSync;
    if (this.#syncError !== null) throw this.#syncError.error;
    await this.file.sync();
    this.#sha512Digest = await this.#sha512.digest();
  }

  /** Closes every handle but the locked one, and hands that over (the lock stays). */
  keepLock(): Deno.FsFile {
    this.#closed = true;
    this.#syncHandle?.close();
    return this.file;
  }

  /** After a failure: waits for running writes and syncs, then closes the file. */
  async abort(): Promise<void> {
    this.#sha512.close();
    await this.#tail.catch(() => {});
    await this.#lastSync;
    this.#close();
  }

  /** SHA-256 (hex) and SHA-512 (base64) of every byte written. */
  digests(): { checksum_sha256: string; checksum_sha512: string } {
    return {
      checksum_sha256: this.#hash.digest("hex"),
      checksum_sha512: this.#sha512Digest,
    };
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.file.close();
    this.#syncHandle?.close();
  }

  async #submit(): Promise<void> {
    if (this.#syncError !== null) throw this.#syncError.error;
    const block = this.#block;
    const bytes = block.subarray(0, this.#filled);
    const written = this.#tail.then(() => writeAll(this.file, bytes));
    // Observed by a later submit, finish or abort; never an unhandled rejection.
    written.catch(() => {});
    this.#tail = written;
    const hashed = this.#sha512.add(bytes);
    const done = Promise.all([written, hashed]);
    // Observed by a later submit or not at all (abort waits for the writes only).
    done.catch(() => {});
    this.#queued.push({ block, done });
    this.#unsynced += bytes.byteLength;
    if (this.#unsynced >= EARLY_SYNC_BYTES && !this.#syncRunning) this.#syncEarly(written);
    // Hashing runs while the block is being written.
    this.#hash.update(bytes);
    this.#filled = 0;
    if (this.#free.length === 0 && this.#blocks < BLOCKS) {
      this.#blocks++;
      this.#free.push(sharedBlock());
    }
    if (this.#free.length === 0) {
      // Every block is taken: the oldest is free again once it is written and hashed.
      const oldest = this.#queued.shift()!;
      await oldest.done;
      this.#free.push(oldest.block);
    }
    this.#block = this.#free.pop()!;
  }

  /** Starts an fdatasync of what is written once `written` is; never rejects. */
  #syncEarly(written: Promise<void>): void {
    this.#unsynced = 0;
    this.#syncRunning = true;
    this.#lastSync = written
      .then(async () => {
        this.#syncHandle ??= await Deno.open(this.path, { write: true });
        await this.#syncHandle.syncData();
      })
      .catch((error) => {
        this.#syncError ??= { error };
      })
      .finally(() => {
        this.#syncRunning = false;
      });
  }
}

/** A block in shared memory, so that the SHA-512 worker reads it where it is. */
function sharedBlock(): Uint8Array {
  return new Uint8Array(new SharedArrayBuffer(BLOCK_BYTES));
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.byteLength) {
    written += await file.write(bytes.subarray(written));
  }
}

/** Opens a stored artifact for streaming, or null when its file is missing. */
export async function openArtifact(
  dir: string,
  storageKey: string,
): Promise<{ file: Deno.FsFile; size: number } | null> {
  if (!STORAGE_KEY_PATTERN.test(storageKey)) return null;
  try {
    const file = await Deno.open(join(dir, storageKey), { read: true });
    const { size, isFile } = await file.stat();
    if (!isFile) {
      file.close();
      return null;
    }
    return { file, size };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

export async function removeArtifact(dir: string, storageKey: string): Promise<void> {
  if (!STORAGE_KEY_PATTERN.test(storageKey)) return;
  await Deno.remove(join(dir, storageKey)).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
}
