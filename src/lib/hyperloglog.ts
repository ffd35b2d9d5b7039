/**
 * A HyperLogLog sketch of distinct 128-bit hashes (hex), in 4,096 one-byte
 * registers (4 KiB): an estimate of how many distinct hashes were added,
 * with a standard error of about 1.6%. Two sketches merge by taking the
 * greater register, so the union of several sketches is counted once.
 */

/** Index bits: 2^12 registers. */
const INDEX_BITS = 12;
const SKETCH_BYTES = 1 << INDEX_BITS;

/** An empty sketch. */
export function createSketch(): Uint8Array {
  return new Uint8Array(SKETCH_BYTES);
}

/**
 * Adds a hash of at least 11 hex digits: the first 3 pick the register, the
 * next 8 give the rank (leading zeros + 1). True when the sketch changed.
 */
export function addToSketch(sketch: Uint8Array, hexHash: string): boolean {
  const index = parseInt(hexHash.slice(0, 3), 16);
  const rest = parseInt(hexHash.slice(3, 11), 16);
  const rank = Math.clz32(rest) + 1;
  if (sketch[index] >= rank) return false;
  sketch[index] = rank;
  return true;
}

/** Takes every greater register of `from` into `into`; true when `into` changed. */
export function mergeSketch(into: Uint8Array, from: Uint8Array): boolean {
  let changed = false;
  for (let i = 0; i < SKETCH_BYTES; i++) {
    if (from[i] > into[i]) {
      into[i] = from[i];
      changed = true;
    }
  }
  return changed;
}

/** The estimated number of distinct hashes added (linear counting while registers are empty). */
export function estimateSketch(sketch: Uint8Array): number {
  const m = SKETCH_BYTES;
  let sum = 0;
  let zeros = 0;
  for (let i = 0; i < m; i++) {
    sum += 2 ** -sketch[i];
    if (sketch[i] === 0) zeros++;
  }
  const raw = (0.7213 / (1 + 1.079 / m)) * m * m / sum;
  if (raw <= 2.5 * m && zeros > 0) return Math.round(m * Math.log(m / zeros));
  return Math.round(raw);
}
