import assert from "node:assert/strict";
import { Delimiter } from "../src/http/byte_search.ts";
import { multipartBoundary, MultipartError, readMultipart } from "../src/http/multipart.ts";
import { concatBytes } from "./helpers.ts";

const encoder = new TextEncoder();

/** A stream that hands out `bytes` in pieces of `size` (to split delimiters anywhere). */
function streamOf(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  return piecesOf(bytes, [size], "default");
}

/**
 * A stream that hands out `bytes` in pieces of the given sizes (the last size
 * repeats). A "bytes" stream is read through the reader's own reused buffer,
 * like a request body; a "default" stream hands out its own chunks.
 */
function piecesOf(
  bytes: Uint8Array,
  sizes: number[],
  type: "bytes" | "default",
): ReadableStream<Uint8Array> {
  let offset = 0;
  let index = 0;
  const pull = (controller: { enqueue(chunk: Uint8Array<ArrayBuffer>): void; close(): void }) => {
    if (offset >= bytes.length) return controller.close();
    const size = sizes[Math.min(index++, sizes.length - 1)];
    controller.enqueue(bytes.slice(offset, offset + size));
    offset += size;
  };
  return type === "bytes"
    ? new ReadableStream({ type: "bytes", pull })
    : new ReadableStream<Uint8Array>({ pull });
}

interface ReadPart {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  body: string;
}

async function readAll(stream: ReadableStream<Uint8Array>, boundary: string) {
  const parts: ReadPart[] = [];
  for await (const part of readMultipart(stream, boundary)) {
    const body = new TextDecoder().decode(await bodyBytes(part.body));
    parts.push({ name: part.name, filename: part.filename, contentType: part.contentType, body });
  }
  return parts;
}

/** A part's bytes, copied chunk by chunk (a chunk is valid only until the next is read). */
async function bodyBytes(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk.slice());
  return await new Blob(chunks as BlobPart[]).bytes();
}

const BOUNDARY = "----formboundaryXYZ";
const RAW = [
  "preamble to ignore\r\n",
  `--${BOUNDARY}\r\n`,
  'Content-Disposition: form-data; name="version"\r\n\r\n',
  "1.2.3\r\n",
  `--${BOUNDARY}\r\n`,
  'Content-Disposition: form-data; name="file"; filename="C:\\dir\\a;b \\"q\\".bin"\r\n',
  "Content-Type: application/x-thing\r\n\r\n",
  `line one\r\n--${BOUNDARY.slice(0, 5)} not a boundary\r\n\r\nend\r\n`,
  `--${BOUNDARY}\r\n`,
  'Content-Disposition: form-data; name="raw"; filename="x.bin"\r\n\r\n',
  "\r\n",
  `--${BOUNDARY}--\r\nepilogue`,
].join("");

Deno.test("multipart reader", async (t) => {
  await t.step("reads fields and files at every chunk size", async () => {
    const bytes = encoder.encode(RAW);
    for (const size of [1, 2, 3, 5, 7, 16, 31, 64, 1000]) {
      const parts = await readAll(streamOf(bytes, size), BOUNDARY);
      assert.deepEqual(parts, [
        { name: "version", filename: undefined, contentType: undefined, body: "1.2.3" },
        {
          name: "file",
          filename: 'C:\\dir\\a;b "q".bin',
          contentType: "application/x-thing",
          body: `line one\r\n--${BOUNDARY.slice(0, 5)} not a boundary\r\n\r\nend`,
        },
        // No Content-Type header: reported as missing, not defaulted.
        { name: "raw", filename: "x.bin", contentType: undefined, body: "" },
      ], `chunk size ${size}`);
    }
  });

  await t.step("skips unread parts and supports text()", async () => {
    const names: string[] = [];
    let version = "";
    for await (const part of readMultipart(streamOf(encoder.encode(RAW), 4), BOUNDARY)) {
      names.push(part.name);
      if (part.name === "version") version = await part.text(100);
    }
    assert.deepEqual(names, ["version", "file", "raw"]);
    assert.equal(version, "1.2.3");
  });

  await t.step("filename* and UTF-8 names", async () => {
    const raw = `--b\r\nContent-Disposition: form-data; name="f"; filename="fallback.txt"; ` +
      `filename*=UTF-8''%C3%BCber%20%E6%97%A5.txt\r\n\r\nx\r\n--b\r\n` +
      `Content-Disposition: form-data; name="g"; filename="日本;語.txt"\r\n\r\ny\r\n--b--`;
    const parts = await readAll(streamOf(encoder.encode(raw), 3), "b");
    assert.equal(parts[0].filename, "über 日.txt");
    assert.equal(parts[1].filename, "日本;語.txt");
  });

  await t.step("a truncated body is an error", async () => {
    const raw = encoder.encode(RAW.slice(0, RAW.indexOf("end\r\n")));
    await assert.rejects(readAll(streamOf(raw, 10), BOUNDARY), MultipartError);
  });

  await t.step("a body without parts is an error", async () => {
    await assert.rejects(readAll(streamOf(encoder.encode("hello"), 10), BOUNDARY), MultipartError);
  });

  await t.step("text() refuses an oversized field", async () => {
    const raw = `--b\r\nContent-Disposition: form-data; name="v"\r\n\r\n${"x".repeat(50)}\r\n--b--`;
    await assert.rejects(async () => {
      for await (const part of readMultipart(streamOf(encoder.encode(raw), 8), "b")) {
        await part.text(10);
      }
    }, MultipartError);
  });

  await t.step("oversized part headers are an error", async () => {
    const raw = `--b\r\nX-Long: ${"x".repeat(20_000)}\r\n\r\nv\r\n--b--`;
    await assert.rejects(readAll(streamOf(encoder.encode(raw), 1000), "b"), MultipartError);
  });

  await t.step("multipartBoundary reads the Content-Type", () => {
    assert.equal(multipartBoundary('multipart/form-data; boundary="a b"'), "a b");
    assert.equal(multipartBoundary("Multipart/Form-Data; charset=x; boundary=abc"), "abc");
    assert.equal(multipartBoundary("application/x-www-form-urlencoded"), null);
    assert.equal(multipartBoundary("multipart/form-data"), null);
    assert.equal(multipartBoundary(undefined), null);
  });

  await t.step("matches a Request built by FormData, big file at constant chunking", async () => {
    const big = new Uint8Array(300_000);
    for (let i = 0; i < big.length; i += 65536) crypto.getRandomValues(big.subarray(i, i + 65536));
    const form = new FormData();
    form.append("csrf_token", "t");
    form.append("file", new File([big], "big.bin", { type: "application/octet-stream" }));
    const request = new Request("http://x/", { method: "POST", body: form });
    const boundary = multipartBoundary(request.headers.get("content-type") ?? "")!;
    let received = 0;
    let same = true;
    for await (const part of readMultipart(request.body!, boundary)) {
      if (part.name !== "file") continue;
      for await (const chunk of part.body) {
        same &&= chunk.every((byte, i) => byte === big[received + i]);
        received += chunk.length;
      }
    }
    assert.equal(received, big.length);
    assert.ok(same);
  });
});

/** Every index of `needle` in `haystack`, the slow and obvious way. */
function naiveFind(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function naivePartialAtEnd(haystack: Uint8Array, needle: Uint8Array): number {
  for (let n = Math.min(needle.length - 1, haystack.length); n > 0; n--) {
    if (haystack.subarray(haystack.length - n).every((byte, i) => byte === needle[i])) return n;
  }
  return 0;
}

/** A form with one file part between two text fields. */
function fileForm(boundary: string, file: Uint8Array): Uint8Array {
  return concatBytes(
    `--${boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\ntoken\r\n`,
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n`,
    "Content-Type: application/octet-stream\r\n\r\n",
    file,
    `\r\n--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0\r\n`,
    `--${boundary}--\r\n`,
  );
}

/** Reads `form` (from fileForm) and checks that the file and both fields come back intact. */
async function assertFileForm(
  stream: ReadableStream<Uint8Array>,
  boundary: string,
  file: Uint8Array,
  label: string,
) {
  const seen: string[] = [];
  for await (const part of readMultipart(stream, boundary)) {
    seen.push(part.name);
    if (part.name === "file") {
      const got = await bodyBytes(part.body);
      assert.equal(got.length, file.length, `${label}: file length`);
      assert.ok(got.every((byte, i) => byte === file[i]), `${label}: file bytes`);
    } else {
      assert.equal(await part.text(100), part.name === "version" ? "1.0" : "token", label);
    }
  }
  assert.deepEqual(seen, ["csrf_token", "file", "version"], label);
}

/** Deterministic pseudo-random bytes (xorshift), so a failure can be replayed. */
function pseudoRandom(seed: number): () => number {
  let x = seed || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

Deno.test("multipart reader: delimiter search and chunk edges", async (t) => {
  const boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW";
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  /** Byte sequences that look like the start of a delimiter but are not one. */
  const nearMisses = [
    "\r",
    "\r\n",
    "\r\n-",
    "\r\n--",
    "\r\r\n--",
    `\n--${boundary}`,
    `--${boundary}`,
    `\r\n-${boundary}`,
    `\r\n--${boundary.slice(0, -1)}`,
    `\r\n--${boundary.slice(0, -1)}X`,
    `\r\n--${boundary.slice(1)}`,
    `\r\n--${boundary.slice(0, 10)}\r\n--${boundary.slice(0, 20)}`,
    ...Array.from({ length: delimiter.length - 1 }, (_, n) => `\r\n--${boundary}`.slice(0, n + 1)),
  ];

  await t.step("Delimiter.find and partialAtEnd agree with a naive search", () => {
    const random = pseudoRandom(7);
    for (const needleText of [`\r\n--${boundary}`, "\r\n--b", "\r\n--ab-ab"]) {
      const needle = encoder.encode(needleText);
      const search = new Delimiter(needle);
      // Haystacks made of pieces of the needle and stray bytes, so near misses abound.
      const alphabet = [...new Set([...needle, 0x00, 0x41, 0xff])];
      for (let round = 0; round < 2000; round++) {
        const length = Math.floor(random() * 3 * needle.length);
        const haystack = new Uint8Array(length);
        for (let i = 0; i < length; i++) {
          haystack[i] = random() < 0.3
            ? needle[i % needle.length]
            : alphabet[Math.floor(random() * alphabet.length)];
        }
        if (random() < 0.3 && length >= needle.length) {
          haystack.set(needle, Math.floor(random() * (length - needle.length + 1)));
        }
        const label = `${needleText}: ${JSON.stringify([...haystack])}`;
        assert.equal(search.find(haystack), naiveFind(haystack, needle), label);
        assert.equal(search.partialAtEnd(haystack), naivePartialAtEnd(haystack, needle), label);
      }
    }
  });

  await t.step("a delimiter split across two chunks at every offset", async () => {
    const file = encoder.encode("payload\r\n--almost");
    const form = fileForm(boundary, file);
    const fileEnd = naiveFind(form, encoder.encode("--almost")) + "--almost".length;
    // Every split from a few bytes before the file's end to past its delimiter.
    for (let split = fileEnd - 3; split <= fileEnd + delimiter.length + 3; split++) {
      for (const type of ["default", "bytes"] as const) {
        await assertFileForm(
          piecesOf(form, [split, form.length], type),
          boundary,
          file,
          `split at ${split} (${type})`,
        );
      }
    }
  });

  await t.step("near-boundary bytes inside a part, at every position and chunking", async () => {
    for (const miss of nearMisses) {
      const file = concatBytes("A", miss, "B", miss);
      const form = fileForm(boundary, file);
      for (const type of ["default", "bytes"] as const) {
        for (const size of [1, 2, 3, 5, delimiter.length - 1, delimiter.length, 64, 4096]) {
          await assertFileForm(
            piecesOf(form, [size], type),
            boundary,
            file,
            `${JSON.stringify(miss)} in chunks of ${size} (${type})`,
          );
        }
      }
    }
  });

  await t.step("a file that ends with a near miss right before the delimiter", async () => {
    for (const miss of nearMisses) {
      const file = encoder.encode(`data${miss}`);
      for (const type of ["default", "bytes"] as const) {
        for (const size of [1, 7, 1000]) {
          await assertFileForm(
            piecesOf(fileForm(boundary, file), [size], type),
            boundary,
            file,
            `ends with ${JSON.stringify(miss)}, chunks of ${size} (${type})`,
          );
        }
      }
    }
  });

  await t.step("random binary files full of CR, LF and dashes, random chunk sizes", async () => {
    const random = pseudoRandom(42);
    const alphabet = [0x0d, 0x0a, 0x2d, ...encoder.encode(boundary.slice(-6)), 0x00];
    for (let round = 0; round < 40; round++) {
      const file = new Uint8Array(Math.floor(random() * 300_000));
      for (let i = 0; i < file.length; i++) {
        file[i] = alphabet[Math.floor(random() * alphabet.length)];
      }
      // Now and then a partial delimiter, one byte short of a real one.
      for (let k = 0; k < 20 && file.length > delimiter.length; k++) {
        const at = Math.floor(random() * (file.length - delimiter.length));
        file.set(delimiter.subarray(0, delimiter.length - 1), at);
      }
      // A planted prefix may have been completed by chance: break every real delimiter.
      for (let at = naiveFind(file, delimiter); at >= 0; at = naiveFind(file, delimiter)) {
        file[at + delimiter.length - 1] = 0x00;
      }
      const sizes = Array.from({ length: 50 }, () => 1 + Math.floor(random() * 100_000));
      for (const type of ["default", "bytes"] as const) {
        await assertFileForm(
          piecesOf(fileForm(boundary, file), sizes, type),
          boundary,
          file,
          `round ${round} (${type})`,
        );
      }
    }
  });

  await t.step("a big file through a byte stream: chunks are views, never big copies", async () => {
    const file = new Uint8Array(3 * 1024 * 1024 + 17);
    for (let i = 0; i < file.length; i += 65536) {
      crypto.getRandomValues(file.subarray(i, Math.min(file.length, i + 65536)));
    }
    const form = fileForm(boundary, file);
    let received = 0;
    for await (const part of readMultipart(piecesOf(form, [65536], "bytes"), boundary)) {
      if (part.name !== "file") continue;
      for await (const chunk of part.body) {
        assert.ok(chunk.every((byte, i) => byte === file[received + i]));
        received += chunk.length;
        // A view into the 256 KiB read buffer, or a few bytes joined across two reads.
        assert.ok(chunk.buffer.byteLength === 256 * 1024 || chunk.buffer.byteLength <= 8192);
      }
    }
    assert.equal(received, file.length);
  });
});
