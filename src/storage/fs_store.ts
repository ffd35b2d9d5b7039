/** The `fs` backend: artifact files in one directory (see artifacts.ts). */
import { join } from "node:path";
import { STORAGE_KEY_PATTERN } from "../lib/limits.ts";
import {
  claimArtifact,
  listArtifactFiles,
  openArtifact,
  removeArtifact,
  saveArtifact,
  saveArtifactLocked,
  sweepAbandonedParts,
} from "./artifacts.ts";
import type { ArtifactStore, OpenedArtifact, Sweepable } from "./types.ts";
import { planSpans, spansStream } from "./spans.ts";
import { pathExists } from "../lib/files.ts";
import { meteredStream } from "../lib/metered_stream.ts";

/** Bytes read from a file per chunk. */
export const CHUNK_SIZE = 256 * 1024;

export interface FsArtifactStore extends ArtifactStore {
  readonly kind: "fs";
  readonly dir: string;
  readonly sweeping: Sweepable;
  settle(storageKey: string): void;
}

/** How often the sweep runs (parts of dead uploads, then unreferenced files). */
const SWEEP_EVERY_MS = 10 * 60_000;
/** A saved file not settled by then (a caller that forgot) is let go, so no descriptor leaks. */
export const LOCK_HOLD_MAX_MS = 60 * 60_000;

export interface FsStoreOptions {
  /** Unreferenced files younger than this are never swept (APP_FS_SWEEP_AFTER_SECONDS). */
  sweepAfterMs?: number;
}

export function createFsStore(dir: string, options: FsStoreOptions = {}): FsArtifactStore {
  /** Files saved by this process whose release is not settled yet: their locks. */
  const held = new Map<string, { lock: Deno.FsFile; timer: ReturnType<typeof setTimeout> }>();
  const settle = (storageKey: string) => {
    const entry = held.get(storageKey);
    if (entry === undefined) return;
    held.delete(storageKey);
    clearTimeout(entry.timer);
    entry.lock.close();
  };
  return {
    kind: "fs",
    dir,
    async save(source, maxBytes) {
      const { artifact, lock } = await saveArtifactLocked(dir, source, { maxBytes });
      const timer = setTimeout(() => settle(artifact.storage_key), LOCK_HOLD_MAX_MS);
      Deno.unrefTimer(timer);
      held.set(artifact.storage_key, { lock, timer });
      return artifact;
    },
    settle,
    open: async (storageKey) => {
      const opened = await openArtifact(dir, storageKey);
      return opened && openedFile(opened.file, opened.size);
    },
    async remove(storageKey) {
      try {
        await removeArtifact(dir, storageKey);
      } finally {
        settle(storageKey);
      }
    },
    async put(storageKey, source) {
      if (!STORAGE_KEY_PATTERN.test(storageKey)) throw new Error(`bad storage key ${storageKey}`);
      const target = join(dir, storageKey);
      if (await pathExists(target)) throw new Error(`${target} already exists`);
      // Written like an upload (locked part, fsync, rename), under the given key.
      const stored = await saveArtifact(dir, source, {
        maxBytes: Number.MAX_SAFE_INTEGER,
        storageKey,
      });
      return { checksum_sha256: stored.checksum_sha256, size_bytes: stored.size_bytes };
    },
    where: (storageKey) => join(dir, storageKey),
    async findAny() {
      try {
        for await (const entry of Deno.readDir(dir)) return entry.name;
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
      return null;
    },
    sweeping: {
      afterMs: options.sweepAfterMs ?? 600_000,
      everyMs: SWEEP_EVERY_MS,
      removeAbandonedUploads: () => sweepAbandonedParts(dir),
      listArtifacts: () => listArtifactFiles(dir),
      claim: (storageKey) => claimArtifact(dir, storageKey),
    },
  };
}

function openedFile(file: Deno.FsFile, size: number): OpenedArtifact {
  return {
    size,
    read: (start, length) => fileSliceStream(file, { start, length }),
    // Reads of a file cost no request: every multi-range answer is read in the order asked.
    readSpans: (spans) =>
      spansStream(planSpans(spans)!, spans, {
        read: (start, length) => fileSliceStream(file, { start, length, keepOpen: true }),
        close: () => file.close(),
      }),
    close: () => file.close(),
  };
}

/** Which bytes of a file to stream, and in what chunks. */
export interface FileSlice {
  start: number;
  length: number;
  chunkSize?: number;
  /** Leaves the file open at the end (the caller reads more of it and closes it). */
  keepOpen?: boolean;
}

/**
 * A stream of `length` bytes of `file` from `start`, read in {@link CHUNK_SIZE}
 * chunks (or `chunkSize`), each when its reader asks for it (a metered stream,
 * src/lib/metered_stream.ts: whoever sends it can count its bytes without
 * wrapping it). It seeks first, closes the file at the end, on cancel (client
 * gone) and on error, and fails if the file ends early (so a short body is
 * never passed off as complete).
 */
export async function fileSliceStream(
  file: Deno.FsFile,
  { start, length, chunkSize = CHUNK_SIZE, keepOpen = false }: FileSlice,
): Promise<ReadableStream<Uint8Array>> {
  let closed = false;
  const close = () => {
    if (closed || keepOpen) return;
    closed = true;
    file.close();
  };
  try {
    if (start > 0 || keepOpen) await file.seek(start, Deno.SeekMode.Start);
  } catch (error) {
    close();
    throw error;
  }
  let remaining = length;
  return meteredStream((meter) => ({
    async pull(controller) {
      if (remaining === 0) {
        close();
        controller.close();
        meter.end(true);
        return;
      }
      const buffer = new Uint8Array(Math.min(chunkSize, remaining));
      let filled = 0;
      try {
        while (filled < buffer.byteLength) {
          const n = await file.read(buffer.subarray(filled));
          if (n === null) throw new Error(`artifact ended ${remaining - filled} bytes early`);
          filled += n;
        }
      } catch (error) {
        close();
        meter.end(false);
        controller.error(error);
        return;
      }
      remaining -= filled;
      meter.chunk(filled);
      controller.enqueue(buffer);
      if (remaining === 0) {
        close();
        controller.close();
        meter.end(true);
      }
    },
    cancel() {
      close();
      meter.end(false);
    },
  }));
}
