/**
 * electron-builder's block map of a file, the one electron-updater's
 * differential download reads: the file cut into blocks by content (a Rabin
 * rolling hash over 64 bytes, blocks of 8 to 32 KiB, about 16 KiB on
 * average, the parameters of app-builder's `blockmap` command), each named by
 * its 18-byte BLAKE2b in base64, as JSON `{version: "2", files: [{name:
 * "file", offset: 0, checksums, sizes}]}` gzipped. Cut and named the same way
 * as app-builder's, so that a block map made here and one made by
 * electron-builder for another version share every unchanged block
 * (tests/block_map_test.ts compares the two).
 */
import { gzipSync } from "node:zlib";
import { Buffer } from "node:buffer";
import { createBLAKE2b, type IHasher } from "hash-wasm";
import { concatBytes } from "../lib/bytes.ts";

const WINDOW = 64;
const MIN_BYTES = 8 * 1024;
const AVG_BYTES = 16 * 1024;
const MAX_BYTES = 32 * 1024;
/** A boundary where the low bits of the hash are all ones. */
const HASH_MASK = AVG_BYTES - 1;
/** The degree-63 irreducible polynomial of the chunker (go-rabin's Poly64). */
const POLY64 = 0xbfe6b8a5bf378d83n;
const DEGREE = 63;
const SHIFT = DEGREE - 8;
const MASK64 = (1n << 64n) - 1n;

/** The block map's JSON, before gzip. */
export interface BlockMap {
  version: "2";
  files: Array<{ name: string; offset: number; checksums: string[]; sizes: number[] }>;
}

/** `a mod POLY64` over GF(2). */
function polyMod(a: bigint): bigint {
  for (let bit = BigInt(a.toString(2).length - 1); bit >= BigInt(DEGREE); bit--) {
    if ((a >> bit) & 1n) a ^= POLY64 << (bit - BigInt(DEGREE));
  }
  return a;
}

/** The rolling hash's tables, each as high and low 32-bit halves. */
const TABLES = (() => {
  const pushHi = new Uint32Array(256), pushLo = new Uint32Array(256);
  const popHi = new Uint32Array(256), popLo = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    const shifted = BigInt(i) << BigInt(DEGREE);
    // i(x)·x^63 mod p plus i(x)·x^63 itself, which clears the bits shifted out.
    const push = (shifted ^ polyMod(shifted)) & MASK64;
    const pop = polyMod(BigInt(i) << BigInt((WINDOW - 1) * 8));
    pushHi[i] = Number(push >> 32n);
    pushLo[i] = Number(push & 0xffffffffn);
    popHi[i] = Number(pop >> 32n);
    popLo[i] = Number(pop & 0xffffffffn);
  }
  return { pushHi, pushLo, popHi, popLo };
})();

/**
 * The length of the block that starts at `data[start]`, when `data` holds at
 * least MAX_BYTES from there or the file ends within it (`available` bytes).
 */
function blockLength(data: Uint8Array, start: number, available: number): number {
  const n = Math.min(available, MAX_BYTES);
  if (n < MIN_BYTES) return n;
  const { pushHi, pushLo, popHi, popLo } = TABLES;
  let hi = 0, lo = 0;
  let head = start + MIN_BYTES - WINDOW;
  for (let i = head; i < head + WINDOW; i++) {
    const top = (hi >>> (SHIFT - 32)) & 0xff;
    const nextHi = ((hi << 8) | (lo >>> 24)) >>> 0;
    lo = (((lo << 8) | data[i]) ^ pushLo[top]) >>> 0;
    hi = (nextHi ^ pushHi[top]) >>> 0;
  }
  const limit = start + MAX_BYTES - WINDOW;
  const end = start + n;
  while ((lo & HASH_MASK) !== HASH_MASK && head < limit) {
    if (head + WINDOW === end) break; // the file ends inside this block
    const pop = data[head];
    hi = (hi ^ popHi[pop]) >>> 0;
    lo = (lo ^ popLo[pop]) >>> 0;
    const top = (hi >>> (SHIFT - 32)) & 0xff;
    const nextHi = ((hi << 8) | (lo >>> 24)) >>> 0;
    lo = (((lo << 8) | data[head + WINDOW]) ^ pushLo[top]) >>> 0;
    hi = (nextHi ^ pushHi[top]) >>> 0;
    head++;
  }
  return head + WINDOW - start;
}

/** Cuts bytes fed in any pieces into blocks; `finish` gives the block map's JSON. */
export interface BlockMapBuilder {
  update(bytes: Uint8Array): void;
  finish(): BlockMap;
}

export async function createBlockMapBuilder(): Promise<BlockMapBuilder> {
  const hasher: IHasher = await createBLAKE2b(18 * 8);
  const checksums: string[] = [];
  const sizes: number[] = [];
  let pending = new Uint8Array(0);

  const block = (data: Uint8Array, start: number, length: number) => {
    hasher.init();
    hasher.update(data.subarray(start, start + length));
    checksums.push(Buffer.from(hasher.digest("binary")).toString("base64"));
    sizes.push(length);
  };
  /** Cuts every block `data` decides; returns where the undecided rest starts. */
  const cut = (data: Uint8Array, final: boolean): number => {
    let start = 0;
    while (start < data.byteLength && (final || data.byteLength - start >= MAX_BYTES)) {
      const length = blockLength(data, start, data.byteLength - start);
      block(data, start, length);
      start += length;
    }
    return start;
  };

  return {
    update(bytes) {
      if (bytes.byteLength === 0) return;
      const data = pending.byteLength === 0 ? bytes : concatBytes([pending, bytes]);
      const used = cut(data, false);
      // Copied: the caller may reuse its buffer.
      pending = data.slice(used);
    },
    finish() {
      cut(pending, true);
      pending = new Uint8Array(0);
      return { version: "2", files: [{ name: "file", offset: 0, checksums, sizes }] };
    },
  };
}

/** The block map file: its JSON gzipped at the best compression, as app-builder writes it. */
export function encodeBlockMap(map: BlockMap): Uint8Array {
  return new Uint8Array(gzipSync(JSON.stringify(map), { level: 9 }));
}

/** The block map of a stream of bytes, encoded. */
export async function buildBlockMap(
  source: AsyncIterable<Uint8Array>,
): Promise<{ map: BlockMap; encoded: Uint8Array }> {
  const builder = await createBlockMapBuilder();
  for await (const chunk of source) builder.update(chunk);
  const map = builder.finish();
  return { map, encoded: encodeBlockMap(map) };
}
