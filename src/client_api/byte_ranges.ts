/**
 * Several byte ranges in one request (RFC 9110 section 14.6): `Range:
 * bytes=a-b,c-d,…` answered by a `206` whose body is `multipart/byteranges`,
 * one part per satisfiable range, in the order asked, never merged or
 * reordered (electron-updater's differential download splits the answer by
 * position). The work is bounded: at most {@link MAX_RANGES} ranges whose
 * lengths add up to at most the file's size; past either the whole file is
 * sent, which is what nginx does for its static files with `max_ranges`.
 */

/** An inclusive byte range inside the file: `start <= end < size`. */
export interface ByteRange {
  start: number;
  end: number;
}

/** The most ranges one request may ask for (electron-updater sends up to 1,000 in one header). */
export const MAX_RANGES = 2000;

/** One range of a `Range` header: `first-last`, `first-` or `-suffix`. */
const RANGE_SPEC = /^(\d*)-(\d*)$/;

/**
 * The ranges a `Range` header lists, as written, when its unit is `bytes`
 * (empty list elements are allowed, RFC 9110 section 5.6.1); null when it is
 * absent or of another unit.
 */
export function rangeSpecs(header: string | null | undefined): string[] | null {
  if (!header) return null;
  const eq = header.indexOf("=");
  if (eq === -1 || header.slice(0, eq).trim().toLowerCase() !== "bytes") return null;
  return header.slice(eq + 1).split(",").map((s) => s.trim()).filter((s) => s !== "");
}

/**
 * One range of a `Range` header for a file of `size` bytes: the range,
 * clipped to the file; null when it is unsatisfiable (it starts at or beyond
 * the end, or is an empty suffix); `"malformed"` when it is not a range.
 */
export function parseRangeSpec(spec: string, size: number): ByteRange | null | "malformed" {
  const match = RANGE_SPEC.exec(spec);
  if (match === null) return "malformed";
  const [, first, last] = match;
  if (first === "") {
    if (last === "") return "malformed"; // "-" alone
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return null;
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? Infinity : Number(last);
  if (end < start) return "malformed"; // last-pos before first-pos
  if (start >= size) return null;
  return { start, end: Math.min(end, size - 1) };
}

/**
 * The ranges of a `Range` header that asks for two or more, for a file of
 * `size` bytes: the satisfiable ones (clipped to the file) in the order asked,
 * `"unsatisfiable"` when none is, or null when the header asks for fewer than
 * two, is malformed anywhere, or passes the bounds (more than
 * {@link MAX_RANGES} ranges, or more bytes than the file): the caller then
 * treats it as a single range or sends the whole file.
 */
export function parseRangeSet(
  header: string | null | undefined,
  size: number,
): ByteRange[] | "unsatisfiable" | null {
  const specs = rangeSpecs(header);
  if (specs === null || specs.length < 2 || specs.length > MAX_RANGES) return null;
  const ranges: ByteRange[] = [];
  let total = 0;
  for (const spec of specs) {
    const range = parseRangeSpec(spec, size);
    if (range === "malformed") return null;
    if (range === null) continue; // unsatisfiable ranges are left out (RFC 9110 section 14.1.1)
    total += range.end - range.start + 1;
    if (total > size) return null;
    ranges.push(range);
  }
  return ranges.length === 0 ? "unsatisfiable" : ranges;
}

const encoder = new TextEncoder();

/** The parts' framing: what comes before each part's bytes, and after the last. */
function framing(
  ranges: ByteRange[],
  { size, contentType, boundary }: { size: number; contentType: string; boundary: string },
): { heads: Uint8Array[]; tail: Uint8Array } {
  const heads = ranges.map((range, i) =>
    encoder.encode(
      `${i === 0 ? "" : "\r\n"}--${boundary}\r\nContent-Type: ${contentType}\r\n` +
        `Content-Range: bytes ${range.start}-${range.end}/${size}\r\n\r\n`,
    )
  );
  return { heads, tail: encoder.encode(`\r\n--${boundary}--\r\n`) };
}

/** A `multipart/byteranges` answer's body and headers, streamed from the ranges' bytes. */
export interface MultipartBody {
  /** `multipart/byteranges; boundary=…` */
  contentType: string;
  contentLength: number;
  body: ReadableStream<Uint8Array>;
}

/**
 * The multipart body of `ranges`, whose bytes `bytes` yields back to back in
 * the same order (exactly the sum of their lengths); each part carries the
 * file's `contentType` and its `Content-Range`.
 */
export function multipartByteranges(
  ranges: ByteRange[],
  bytes: ReadableStream<Uint8Array>,
  { size, contentType }: { size: number; contentType: string },
): MultipartBody {
  const boundary = crypto.randomUUID().replaceAll("-", "");
  const { heads, tail } = framing(ranges, { size, contentType, boundary });
  const contentLength = heads.reduce((sum, head) => sum + head.byteLength, tail.byteLength) +
    ranges.reduce((sum, range) => sum + range.end - range.start + 1, 0);
  return {
    contentType: `multipart/byteranges; boundary=${boundary}`,
    contentLength,
    body: ReadableStream.from(parts(ranges, bytes, { heads, tail })),
  };
}

async function* parts(
  ranges: ByteRange[],
  bytes: ReadableStream<Uint8Array>,
  { heads, tail }: { heads: Uint8Array[]; tail: Uint8Array },
): AsyncGenerator<Uint8Array> {
  let index = 0;
  let left = 0; // bytes of part `index - 1` still to come
  for await (let chunk of bytes) {
    while (chunk.byteLength > 0) {
      if (left === 0) {
        if (index === ranges.length) throw new Error("the ranges' bytes run past their lengths");
        yield heads[index];
        left = ranges[index].end - ranges[index].start + 1;
        index++;
      }
      const take = Math.min(left, chunk.byteLength);
      yield chunk.subarray(0, take);
      left -= take;
      chunk = chunk.subarray(take);
    }
  }
  if (left !== 0 || index !== ranges.length) throw new Error("the ranges' bytes ended early");
  yield tail;
}
