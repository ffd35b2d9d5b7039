import assert from "node:assert/strict";
import { multipartBoundary, MultipartError, readMultipart } from "../admin/multipart.ts";

const encoder = new TextEncoder();

/** A stream that hands out `bytes` in pieces of `size` (to split delimiters anywhere). */
function streamOf(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
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
    const chunks: Uint8Array[] = [];
    for await (const chunk of part.body) chunks.push(chunk.slice());
    const body = new TextDecoder().decode(await new Blob(chunks as BlobPart[]).bytes());
    parts.push({ name: part.name, filename: part.filename, contentType: part.contentType, body });
  }
  return parts;
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
