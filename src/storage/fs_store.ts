/** The `fs` backend: artifact files in one directory (see artifacts.ts). */
import { join } from "node:path";
import { STORAGE_KEY_PATTERN } from "../lib/limits.ts";
import { openArtifact, removeArtifact, saveArtifact, sweepAbandonedParts } from "./artifacts.ts";
import type { ArtifactStore, OpenedArtifact } from "./types.ts";
import { pathExists } from "../lib/files.ts";

/** Bytes read from a file per chunk. */
export const CHUNK_SIZE = 256 * 1024;

export interface FsArtifactStore extends ArtifactStore {
  readonly kind: "fs";
  readonly dir: string;
}

export function createFsStore(dir: string): FsArtifactStore {
  return {
    kind: "fs",
    dir,
    save: (source, maxBytes) => saveArtifact(dir, source, maxBytes),
    open: async (storageKey) => {
      const opened = await openArtifact(dir, storageKey);
      return opened && openedFile(opened.file, opened.size);
    },
    remove: (storageKey) => removeArtifact(dir, storageKey),
    async put(storageKey, source) {
      if (!STORAGE_KEY_PATTERN.test(storageKey)) throw new Error(`bad storage key ${storageKey}`);
      const target = join(dir, storageKey);
      if (await pathExists(target)) throw new Error(`${target} already exists`);
      // Written like an upload (locked part, fsync, rename), under the given key.
      const stored = await saveArtifact(dir, source, Number.MAX_SAFE_INTEGER, storageKey);
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
    sweep: () => sweepAbandonedParts(dir),
  };
}

function openedFile(file: Deno.FsFile, size: number): OpenedArtifact {
  return {
    size,
    read: (start, length) => fileSliceStream(file, start, length),
    close: () => file.close(),
  };
}

/**
 * A stream of `length` bytes of `file` from `start`, read in {@link CHUNK_SIZE}
 * chunks. It seeks first, closes the file at the end, on cancel (client gone)
 * and on error, and fails if the file ends early (so a short body is never
 * passed off as complete).
 */
export async function fileSliceStream(
  file: Deno.FsFile,
  start: number,
  length: number,
  chunkSize = CHUNK_SIZE,
): Promise<ReadableStream<Uint8Array>> {
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    file.close();
  };
  try {
    if (start > 0) await file.seek(start, Deno.SeekMode.Start);
  } catch (error) {
    close();
    throw error;
  }
  let remaining = length;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (remaining === 0) {
        close();
        controller.close();
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
        controller.error(error);
        return;
      }
      remaining -= filled;
      controller.enqueue(buffer);
      if (remaining === 0) {
        close();
        controller.close();
      }
    },
    cancel() {
      close();
    },
  });
}
