/**
 * A streaming `multipart/form-data` reader on Web Streams.
 *
 * `Request.formData()` buffers the whole body and cuts file names at `;`, so
 * uploads use this instead. It pulls from the body only as fast as the
 * consumer reads a part's bytes, so memory stays constant whatever the size.
 * Parts come one at a time: reading the next part skips what is left of the
 * current one. Raw part headers are kept, so a missing Content-Type stays
 * missing (the caller then uses application/octet-stream).
 *
 * Speed: a byte stream (a request body) is read into one reused buffer (no
 * garbage per chunk), the delimiter is found with Boyer-Moore-Horspool, and
 * a part's bytes are handed out as views into that buffer: only the few bytes
 * at a chunk's end that may start a delimiter are ever copied.
 */
import { concatBytes } from "../lib/bytes.ts";
import { Delimiter, indexOf } from "./byte_search.ts";
import { filenameOf, paramValue, parseHeaderBlock, splitParams } from "./header_params.ts";

export class MultipartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MultipartError";
  }
}

export interface MultipartLimits {
  /** Largest header block of one part. */
  maxHeaderBytes: number;
  /** Most parts in one body. */
  maxParts: number;
}

const DEFAULT_LIMITS: MultipartLimits = { maxHeaderBytes: 16 * 1024, maxParts: 100 };

export interface MultipartPart {
  /** The form field name. */
  name: string;
  /** The `filename` (or `filename*`) parameter as sent, or undefined when absent. */
  filename: string | undefined;
  /** The part's Content-Type header as sent, or undefined when absent. */
  contentType: string | undefined;
  /**
   * The part's bytes. Each chunk is a view into a reused read buffer: valid
   * only until the next chunk is requested (copy what must be kept).
   */
  body: AsyncIterable<Uint8Array>;
  /** The part's bytes as UTF-8 text; more than `maxBytes` raises a MultipartError. */
  text(maxBytes: number): Promise<string>;
}

/** The boundary of a multipart/form-data Content-Type, or null. */
export function multipartBoundary(contentType: string | undefined): string | null {
  if (contentType === undefined) return null;
  const { type, params } = splitParams(contentType);
  if (type.toLowerCase() !== "multipart/form-data") return null;
  const boundary = paramValue(params, "boundary");
  return boundary && boundary.length <= 70 ? boundary : null;
}

const encoder = new TextEncoder();
const CRLF = encoder.encode("\r\n");
const HEADER_END = encoder.encode("\r\n\r\n");

/** Yields the parts of a multipart body in order. */
export async function* readMultipart(
  stream: ReadableStream<Uint8Array>,
  boundary: string,
  limits: Partial<MultipartLimits> = {},
): AsyncGenerator<MultipartPart> {
  const { maxHeaderBytes, maxParts } = { ...DEFAULT_LIMITS, ...limits };
  const scanner = new Scanner(openSource(stream), encoder.encode(`\r\n--${boundary}`));
  try {
    if (!await scanner.skipPastDelimiter()) {
      throw new MultipartError("the multipart body has no parts");
    }
    let parts = 0;
    while (await scanner.afterDelimiter()) {
      if (++parts > maxParts) throw new MultipartError("the form has too many parts");
      const headers = await scanner.readHeaders(maxHeaderBytes);
      const disposition = splitParams(headers.get("content-disposition") ?? "");
      const name = paramValue(disposition.params, "name");
      const body = new PartBody(scanner);
      if (disposition.type.toLowerCase() === "form-data" && name !== undefined) {
        yield {
          name,
          filename: filenameOf(disposition.params),
          contentType: headers.get("content-type"),
          body,
          text: (maxBytes) => body.text(maxBytes),
        };
      }
      await body.skipRest();
    }
  } finally {
    await scanner.close();
  }
}

/** The bytes of one part, pulled from the scanner on demand. */
class PartBody implements AsyncIterable<Uint8Array> {
  #done = false;

  constructor(private readonly scanner: Scanner) {}

  async next(): Promise<Uint8Array | null> {
    if (this.#done) return null;
    const chunk = await this.scanner.readBodyChunk();
    if (chunk === null) this.#done = true;
    return chunk;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (let chunk = await this.next(); chunk !== null; chunk = await this.next()) yield chunk;
  }

  async text(maxBytes: number): Promise<string> {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (let chunk = await this.next(); chunk !== null; chunk = await this.next()) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        throw new MultipartError(`a form field is larger than ${maxBytes} bytes`);
      }
      chunks.push(chunk.slice());
    }
    return new TextDecoder().decode(concatBytes(chunks));
  }

  async skipRest(): Promise<void> {
    while (await this.next() !== null) {
      // discard
    }
  }
}

/**
 * When a few bytes are left over (a possible start of the delimiter, an
 * unfinished header line), only this much of the next chunk is copied behind
 * them; the rest of that chunk is handed on uncopied by the next fill.
 */
const JOIN_BYTES = 4096;

/** Buffered reading of the body with a search for the part delimiter. */
class Scanner {
  // The body starts with "--boundary"; a leading CRLF makes it match the delimiter.
  #buffer: Uint8Array = CRLF;
  /** The rest of a chunk whose start was joined to leftover bytes (see #fill). */
  #pending: Uint8Array | null = null;
  #ended = false;
  readonly #delimiter: Delimiter;

  constructor(
    private readonly source: Source,
    delimiter: Uint8Array,
  ) {
    this.#delimiter = new Delimiter(delimiter);
  }

  /**
   * Makes more bytes available; false at the end of the body. Chunks are used
   * as they come (no copy) unless bytes are left over from the last one.
   */
  async #fill(): Promise<boolean> {
    let next = this.#pending;
    this.#pending = null;
    if (next === null) {
      if (this.#ended) return false;
      // The read reuses the source's buffer: leftover bytes must be copied out first.
      if (this.#buffer.length > 0) this.#buffer = this.#buffer.slice();
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await this.source.read();
      } catch {
        throw new MultipartError("the upload was interrupted");
      }
      if (result.done) {
        this.#ended = true;
        return false;
      }
      next = result.value;
    }
    if (this.#buffer.length === 0) {
      this.#buffer = next;
      return true;
    }
    const joined = Math.min(next.length, JOIN_BYTES);
    if (joined < next.length) this.#pending = next.subarray(joined);
    this.#buffer = concatBytes([this.#buffer, next.subarray(0, joined)]);
    return true;
  }

  async #ensure(bytes: number): Promise<boolean> {
    while (this.#buffer.length < bytes) {
      if (!await this.#fill()) return false;
    }
    return true;
  }

  /** Drops everything up to and including the next delimiter; false when the body ends first. */
  async skipPastDelimiter(): Promise<boolean> {
    for (;;) {
      const at = this.#delimiter.find(this.#buffer);
      if (at >= 0) {
        this.#buffer = this.#buffer.subarray(at + this.#delimiter.length);
        return true;
      }
      this.#buffer = this.#buffer.subarray(
        this.#buffer.length - this.#delimiter.partialAtEnd(this.#buffer),
      );
      if (!await this.#fill()) return false;
    }
  }

  /**
   * Just after a delimiter: "--" ends the body, CRLF (after optional
   * whitespace) starts another part.
   */
  async afterDelimiter(): Promise<boolean> {
    if (!await this.#ensure(2)) throw new MultipartError("the multipart body ended too early");
    if (this.#buffer[0] === 0x2d && this.#buffer[1] === 0x2d) return false;
    for (;;) {
      const at = indexOf(this.#buffer, CRLF);
      if (at >= 0) {
        if (this.#buffer.subarray(0, at).some((byte) => byte !== 0x20 && byte !== 0x09)) {
          throw new MultipartError("malformed multipart boundary line");
        }
        this.#buffer = this.#buffer.subarray(at + 2);
        return true;
      }
      if (this.#buffer.length > 1024) throw new MultipartError("malformed multipart boundary line");
      if (!await this.#fill()) throw new MultipartError("the multipart body ended too early");
    }
  }

  async readHeaders(maxBytes: number): Promise<Map<string, string>> {
    if (!await this.#ensure(2)) throw new MultipartError("the multipart body ended too early");
    // A part without headers starts right away with the blank line.
    if (this.#buffer[0] === CRLF[0] && this.#buffer[1] === CRLF[1]) {
      this.#buffer = this.#buffer.subarray(2);
      return new Map();
    }
    for (;;) {
      const at = indexOf(this.#buffer, HEADER_END);
      if (at >= 0) {
        const block = new TextDecoder().decode(this.#buffer.subarray(0, at));
        this.#buffer = this.#buffer.subarray(at + HEADER_END.length);
        return parseHeaderBlock(block);
      }
      if (this.#buffer.length > maxBytes) {
        throw new MultipartError("a part's headers are too large");
      }
      if (!await this.#fill()) throw new MultipartError("the multipart body ended too early");
    }
  }

  /**
   * The next bytes of the current part (a view into the received chunk, never
   * a copy), or null at its end (the delimiter is consumed). Bytes that could
   * be the start of the delimiter stay buffered until the next chunk decides.
   */
  async readBodyChunk(): Promise<Uint8Array | null> {
    for (;;) {
      const at = this.#delimiter.find(this.#buffer);
      if (at === 0) {
        this.#buffer = this.#buffer.subarray(this.#delimiter.length);
        return null;
      }
      const end = at > 0 ? at : this.#buffer.length - this.#delimiter.partialAtEnd(this.#buffer);
      if (end > 0) {
        const chunk = this.#buffer.subarray(0, end);
        this.#buffer = this.#buffer.subarray(end);
        return chunk;
      }
      if (!await this.#fill()) throw new MultipartError("the multipart body ended too early");
    }
  }

  async close(): Promise<void> {
    if (!this.#ended) await this.source.cancel().catch(() => {});
    this.source.releaseLock();
  }
}

/** Bytes asked of a byte stream at once (Deno fills what has arrived, up to this). */
const READ_BYTES = 256 * 1024;

/** The body's reader. Each chunk it returns is valid only until the next read. */
interface Source {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(): Promise<void>;
  releaseLock(): void;
}

/**
 * A byte stream (as request bodies are) is read into one buffer that is
 * reused for every read; any other stream hands out its own chunks.
 */
function openSource(stream: ReadableStream<Uint8Array>): Source {
  let reader: ReadableStreamBYOBReader;
  try {
    reader = stream.getReader({ mode: "byob" });
  } catch {
    return stream.getReader();
  }
  let buffer = new Uint8Array(READ_BYTES);
  return {
    async read() {
      const result = await reader.read(buffer);
      // The read transferred the buffer; its memory comes back in the result.
      if (result.value) buffer = new Uint8Array(result.value.buffer);
      return result as ReadableStreamReadResult<Uint8Array>;
    },
    cancel: () => reader.cancel(),
    releaseLock: () => reader.releaseLock(),
  };
}
