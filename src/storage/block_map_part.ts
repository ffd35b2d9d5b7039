/**
 * A block map the vendor uploads with the release (the multipart part
 * `blockmap`, electron-builder's `{file}.blockmap`): read whole (it is small),
 * then unpacked as a stream that stops at {@link MAX_BLOCK_MAP_UNPACKED_BYTES}
 * (a gzip bomb is refused after that many bytes, not unpacked whole) and
 * checked against the stored file before it is kept instead of the one the
 * service would build (src/blockmap/background.ts).
 */
import { concatBytes } from "../lib/bytes.ts";
import { ValidationError } from "../kv/errors.ts";
import type { ByteSource } from "./types.ts";

/** The largest block map accepted, gzipped: a 4 GiB artifact's is about 6 MB. */
export const MAX_BLOCK_MAP_BYTES = 32 * 1024 * 1024;

/**
 * The most bytes a block map may unpack to: a 4 GiB artifact's JSON is about
 * 10 MB (262,144 blocks of 16 KiB on average, about 37 bytes each).
 */
export const MAX_BLOCK_MAP_UNPACKED_BYTES = 32 * 1024 * 1024;

/**
 * The gzipped bytes are fed to the unpacker this many at a time: deflate
 * unpacks at most about 1,032 times its input, so one unpacked chunk holds at
 * most about 4 MiB however the part was packed.
 */
const UNPACK_INPUT_BYTES = 4096;

const MIB = 1024 * 1024;

/** The bytes of a small part (`field`), whole; a ValidationError past `max` bytes. */
export async function readSmallPart(
  source: ByteSource,
  { field, max }: { field: string; max: number },
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.byteLength;
    if (size > max) throw new ValidationError(field, `must be at most ${max} bytes`);
    chunks.push(chunk.slice()); // the reader may reuse its buffer
  }
  return concatBytes(chunks);
}

/**
 * The bytes `gzipped` unpacks to, read as a stream; a ValidationError as soon
 * as they pass `max` (a whole number of MiB; the rest is never unpacked) and an Error when they are
 * not gzip.
 */
export async function gunzipAtMost(gzipped: Uint8Array, max: number): Promise<Uint8Array> {
  let offset = 0;
  const input = new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull(controller) {
      if (offset >= gzipped.byteLength) return controller.close();
      controller.enqueue(gzipped.slice(offset, offset + UNPACK_INPUT_BYTES));
      offset += UNPACK_INPUT_BYTES;
    },
  }, { highWaterMark: 0 });
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of input.pipeThrough(new DecompressionStream("gzip"))) {
    size += chunk.byteLength;
    // Leaving the loop cancels the unpacking.
    if (size > max) {
      throw new ValidationError("blockmap", `must unpack to at most ${max / MIB} MiB`);
    }
    chunks.push(chunk);
  }
  return concatBytes(chunks);
}

/**
 * Throws a ValidationError unless `bytes` is a gzipped electron-builder block
 * map (version 2) of one file whose block sizes add up to `fileSize`, and
 * unpacks to at most {@link MAX_BLOCK_MAP_UNPACKED_BYTES}.
 */
export async function checkBlockMap(bytes: Uint8Array, fileSize: number): Promise<void> {
  const refuse = () =>
    new ValidationError(
      "blockmap",
      "must be the gzipped block map electron-builder made for this file (version 2)",
    );
  let map: unknown;
  try {
    const json = await gunzipAtMost(bytes, MAX_BLOCK_MAP_UNPACKED_BYTES);
    map = JSON.parse(new TextDecoder().decode(json));
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw refuse();
  }
  const files = (map as { version?: unknown; files?: unknown }).files;
  if ((map as { version?: unknown }).version !== "2" || !Array.isArray(files)) throw refuse();
  let total = 0;
  for (const file of files) {
    const { checksums, sizes } = file ?? {};
    if (
      !Array.isArray(checksums) || !Array.isArray(sizes) || checksums.length !== sizes.length ||
      !checksums.every((c) => typeof c === "string") ||
      !sizes.every((s) => Number.isSafeInteger(s) && s > 0)
    ) throw refuse();
    total += sizes.reduce((sum: number, s: number) => sum + s, 0);
  }
  if (total !== fileSize) throw refuse();
}
