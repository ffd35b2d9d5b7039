/**
 * A block map the vendor uploads with the release (the multipart part
 * `blockmap`, electron-builder's `{file}.blockmap`): read whole (it is small),
 * then checked against the stored file before it is kept instead of the one
 * the service would build (src/blockmap/background.ts).
 */
import { gunzipSync } from "node:zlib";
import { concatBytes } from "../lib/bytes.ts";
import { ValidationError } from "../store/errors.ts";
import type { ByteSource } from "./types.ts";

/** The largest block map accepted: a 4 GiB artifact's is about 6 MB. */
export const MAX_BLOCK_MAP_BYTES = 32 * 1024 * 1024;

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
 * Throws a ValidationError unless `bytes` is a gzipped electron-builder block
 * map (version 2) of one file whose block sizes add up to `fileSize`.
 */
export function checkBlockMap(bytes: Uint8Array, fileSize: number): void {
  const refuse = () =>
    new ValidationError(
      "blockmap",
      "must be the gzipped block map electron-builder made for this file (version 2)",
    );
  let map: unknown;
  try {
    map = JSON.parse(new TextDecoder().decode(gunzipSync(bytes)));
  } catch {
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
