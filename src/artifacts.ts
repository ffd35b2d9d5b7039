/**
 * Artifact files under `$APP_DATA_DIR/artifacts/`. Bytes are streamed to a
 * temporary file while SHA-256 and size are computed (constant memory, no
 * second read), fsynced, then renamed into place. Only after that does the
 * caller commit a release record; `publishRelease` ties the two together so
 * that a failure at any step leaves neither a release nor a stray file.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { createRelease, type Release, type ReleaseInput } from "./store/mod.ts";

export interface StoredArtifact {
  storage_key: string;
  checksum_sha256: string;
  size_bytes: number;
}

/** The upload is larger than `APP_MAX_UPLOAD_BYTES`. */
export class UploadTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the file is larger than the upload limit of ${maxBytes} bytes`);
    this.name = "UploadTooLargeError";
  }
}

/** The upload carried no bytes. */
export class EmptyUploadError extends Error {
  constructor() {
    super("the file is empty");
    this.name = "EmptyUploadError";
  }
}

const STORAGE_KEY_PATTERN = /^[0-9a-f-]{36}$/;

export async function saveArtifact(
  dir: string,
  stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  maxBytes: number,
): Promise<StoredArtifact> {
  await Deno.mkdir(dir, { recursive: true });
  const storageKey = crypto.randomUUID();
  const tempPath = join(dir, `.upload-${storageKey}.part`);
  const file = await Deno.open(tempPath, { write: true, createNew: true });
  const hash = createHash("sha256");
  let size = 0;
  let closed = false;
  try {
    for await (const chunk of stream) {
      size += chunk.byteLength;
      if (size > maxBytes) throw new UploadTooLargeError(maxBytes);
      hash.update(chunk);
      await writeAll(file, chunk);
    }
    if (size === 0) throw new EmptyUploadError();
    await file.sync();
    file.close();
    closed = true;
    await Deno.rename(tempPath, join(dir, storageKey));
  } catch (error) {
    if (!closed) file.close();
    await Deno.remove(tempPath).catch(() => {});
    throw error;
  }
  return { storage_key: storageKey, checksum_sha256: hash.digest("hex"), size_bytes: size };
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

export type PublishInput = Omit<ReleaseInput, keyof StoredArtifact>;

/** Stores the bytes, then commits the release; on any failure removes the file again. */
export async function publishRelease(
  kv: Deno.Kv,
  dir: string,
  input: PublishInput,
  stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  maxBytes: number,
): Promise<Release> {
  const artifact = await saveArtifact(dir, stream, maxBytes);
  try {
    return await createRelease(kv, { ...input, ...artifact });
  } catch (error) {
    await removeArtifact(dir, artifact.storage_key);
    throw error;
  }
}
