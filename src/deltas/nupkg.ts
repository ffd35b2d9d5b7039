/**
 * Reading a Velopack full package (`vpk pack`'s `.nupkg`, a zip): the `<id>`
 * and `<version>` of the `.nuspec` at its root, read from the zip's central
 * directory in process (no program needed, so the feed works where the
 * delta builds' programs are missing).
 */
import { concatBytes } from "../lib/bytes.ts";

const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
/** The end record is at most this far from the end (22 bytes and a comment of up to 64 KiB). */
const EOCD_SEARCH = 22 + 0xffff;
/** A `.nuspec` larger than this is not read. */
const MAX_NUSPEC_BYTES = 1024 * 1024;

const ENTITIES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&apos;": "'",
};

function elementText(xml: string, name: string): string | null {
  const match = new RegExp(`<${name}(?:\\s[^>]*)?>([^<]*)</${name}>`).exec(xml);
  return match === null ? null : match[1].replace(/&[a-z]+;/g, (e) => ENTITIES[e] ?? e).trim();
}

async function readAt(file: Deno.FsFile, offset: number, length: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(length);
  await file.seek(offset, Deno.SeekMode.Start);
  let read = 0;
  while (read < length) {
    const n = await file.read(bytes.subarray(read));
    if (n === null) break;
    read += n;
  }
  return bytes.subarray(0, read);
}

/**
 * The raw deflate stream `data` inflated, read chunk by chunk and given up as soon as it
 * passes `limit` bytes (whatever size the zip declares), or why it cannot be.
 */
async function inflateBounded(data: Uint8Array, limit: number): Promise<Uint8Array | string> {
  // Fed 1 KiB at a time: deflate inflates at most about 1,032 times, so no chunk is large.
  let fed = 0;
  const input = new ReadableStream<BufferSource>({
    pull(controller) {
      if (fed >= data.byteLength) return controller.close();
      controller.enqueue(data.slice(fed, fed + 1024));
      fed += 1024;
    },
  }, { highWaterMark: 0 });
  const reader = input.pipeThrough(new DecompressionStream("deflate-raw")).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => {});
        return "the .nuspec is too large";
      }
      chunks.push(value);
    }
  } catch {
    return "the .nuspec cannot be read";
  }
  return concatBytes(chunks);
}

/** The bytes of the root `.nuspec` of the zip in `file`, or why there are none. */
async function nuspecBytes(file: Deno.FsFile, size: number): Promise<Uint8Array | string> {
  const tailStart = Math.max(0, size - EOCD_SEARCH);
  const tail = await readAt(file, tailStart, size - tailStart);
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  let eocd = -1;
  for (let i = tail.byteLength - 22; i >= 0; i--) {
    if (view.getUint32(i, true) === EOCD_SIGNATURE) {
      eocd = i;
      break;
    }
  }
  if (eocd === -1) return "not a zip archive";
  const entries = view.getUint16(eocd + 10, true);
  const directorySize = view.getUint32(eocd + 12, true);
  const directoryOffset = view.getUint32(eocd + 16, true);
  if (directoryOffset + directorySize > size) return "not a zip archive";
  const directory = await readAt(file, directoryOffset, directorySize);
  const dir = new DataView(directory.buffer, directory.byteOffset, directory.byteLength);
  let at = 0;
  for (let i = 0; i < entries && at + 46 <= directory.byteLength; i++) {
    if (dir.getUint32(at, true) !== CENTRAL_SIGNATURE) return "not a zip archive";
    const method = dir.getUint16(at + 10, true);
    const compressed = dir.getUint32(at + 20, true);
    const uncompressed = dir.getUint32(at + 24, true);
    const nameLength = dir.getUint16(at + 28, true);
    const extraLength = dir.getUint16(at + 30, true);
    const commentLength = dir.getUint16(at + 32, true);
    const localOffset = dir.getUint32(at + 42, true);
    const name = new TextDecoder().decode(directory.subarray(at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extraLength + commentLength;
    if (!name.endsWith(".nuspec") || name.includes("/")) continue;
    if (compressed > MAX_NUSPEC_BYTES || uncompressed > MAX_NUSPEC_BYTES) {
      return "the .nuspec is too large";
    }
    const local = await readAt(file, localOffset, 30);
    const head = new DataView(local.buffer, local.byteOffset, local.byteLength);
    if (local.byteLength < 30 || head.getUint32(0, true) !== LOCAL_SIGNATURE) {
      return "not a zip archive";
    }
    const dataAt = localOffset + 30 + head.getUint16(26, true) + head.getUint16(28, true);
    const data = await readAt(file, dataAt, compressed);
    if (method === 0) return data;
    if (method !== 8) return "the .nuspec is stored in an unknown way";
    return await inflateBounded(data, MAX_NUSPEC_BYTES);
  }
  return "no .nuspec at the package's root";
}

/** The package's id and version, or why it is no Velopack package. */
export async function readNuspec(
  path: string,
): Promise<{ id: string; version: string } | { problem: string }> {
  using file = await Deno.open(path);
  const size = (await file.stat()).size;
  const bytes = await nuspecBytes(file, size);
  if (typeof bytes === "string") return { problem: bytes };
  const xml = new TextDecoder().decode(bytes);
  const id = elementText(xml, "id");
  const version = elementText(xml, "version");
  if (!id || !version) return { problem: "the .nuspec names no id or version" };
  return { id, version };
}
