/**
 * Byte searches for the multipart reader (src/http/multipart.ts): the part
 * delimiter in file bytes, and short needles in header lines.
 */
/**
 * Boyer-Moore-Horspool search for the part delimiter: each window is judged by
 * its last byte and most windows are skipped by the delimiter's length, so a
 * 64 KiB chunk costs a few thousand steps whatever bytes the file holds.
 */
export class Delimiter {
  readonly #bytes: Uint8Array;
  readonly #skip = new Int32Array(256);

  constructor(bytes: Uint8Array) {
    if (bytes.length === 0) throw new RangeError("empty delimiter");
    this.#bytes = bytes;
    const last = bytes.length - 1;
    this.#skip.fill(bytes.length);
    for (let i = 0; i < last; i++) this.#skip[bytes[i]] = last - i;
  }

  get length(): number {
    return this.#bytes.length;
  }

  /** First index of the delimiter in `haystack`, or -1. */
  find(haystack: Uint8Array): number {
    const needle = this.#bytes;
    const skip = this.#skip;
    const last = needle.length - 1;
    const lastByte = needle[last];
    // `end` is the index of the current window's last byte.
    for (let end = last; end < haystack.length; end += skip[haystack[end]]) {
      if (haystack[end] !== lastByte) continue;
      let i = last - 1;
      let at = end - 1;
      while (i >= 0 && haystack[at] === needle[i]) {
        i--;
        at--;
      }
      if (i < 0) return end - last;
    }
    return -1;
  }

  /** How many bytes at the end of `haystack` could be the start of the delimiter. */
  partialAtEnd(haystack: Uint8Array): number {
    const needle = this.#bytes;
    const first = needle[0];
    const start = Math.max(0, haystack.length - needle.length + 1);
    for (let i = haystack.indexOf(first, start); i >= 0; i = haystack.indexOf(first, i + 1)) {
      let j = 1;
      while (i + j < haystack.length && haystack[i + j] === needle[j]) j++;
      if (i + j === haystack.length) return haystack.length - i;
    }
    return 0;
  }
}

/** First index of a short `needle` in `haystack` (header lines), or -1. */
export function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  const first = needle[0];
  const last = haystack.length - needle.length;
  for (let i = haystack.indexOf(first); i >= 0 && i <= last; i = haystack.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}
