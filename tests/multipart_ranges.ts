/**
 * A strict reader of `multipart/byteranges` bodies (RFC 9110 section 14.6)
 * for the tests: every part's headers and bytes, and nothing left over.
 */
import assert from "node:assert/strict";

export interface Part {
  contentType: string | null;
  contentRange: string | null;
  body: Uint8Array;
}

const decoder = new TextDecoder();

/** The parts of `body`, whose `Content-Type` header is `contentType`. */
export function multipartParts(contentType: string, body: Uint8Array): Part[] {
  const match = /^multipart\/byteranges;\s*boundary=([^\s;]+)$/i.exec(contentType);
  assert.ok(match, `a multipart/byteranges type: ${contentType}`);
  const delimiter = `--${match[1]}`;
  const parts: Part[] = [];
  let at = 0;
  const expect = (text: string) => {
    assert.equal(decoder.decode(body.subarray(at, at + text.length)), text, `at ${at}`);
    at += text.length;
  };
  // nginx opens with a CRLF before the first delimiter (an empty preamble, RFC 2046 section 5.1.1).
  if (decoder.decode(body.subarray(0, 2)) === "\r\n") at = 2;
  expect(delimiter);
  while (true) {
    if (decoder.decode(body.subarray(at, at + 2)) === "--") {
      expect("--\r\n");
      break;
    }
    expect("\r\n");
    const headers = new Map<string, string>();
    while (true) {
      const end = body.indexOf(10, at);
      const line = decoder.decode(body.subarray(at, end)).replace(/\r$/, "");
      at = end + 1;
      if (line === "") break;
      const colon = line.indexOf(":");
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const range = /^bytes (\d+)-(\d+)\/\d+$/.exec(headers.get("content-range") ?? "");
    assert.ok(range, "every part has a Content-Range");
    const length = Number(range[2]) - Number(range[1]) + 1;
    parts.push({
      contentType: headers.get("content-type") ?? null,
      contentRange: headers.get("content-range") ?? null,
      body: body.slice(at, at + length),
    });
    at += length;
    expect(`\r\n${delimiter}`);
  }
  assert.equal(at, body.byteLength, "nothing after the closing delimiter");
  return parts;
}

/**
 * Asserts a `206` of `multipart/byteranges` answering `ranges` (inclusive
 * pairs) of `file`, byte for byte, each part of `contentType`.
 */
export async function assertRangeParts(
  res: Response,
  { file, ranges, contentType }: {
    file: Uint8Array;
    ranges: [number, number][];
    contentType: string;
  },
): Promise<void> {
  assert.equal(res.status, 206);
  assert.equal(res.headers.get("content-range"), null);
  const body = new Uint8Array(await res.arrayBuffer());
  assert.equal(res.headers.get("content-length"), String(body.byteLength));
  const parts = multipartParts(res.headers.get("content-type")!, body);
  assert.equal(parts.length, ranges.length);
  ranges.forEach(([start, end], i) => {
    assert.equal(parts[i].contentType, contentType);
    assert.equal(parts[i].contentRange, `bytes ${start}-${end}/${file.byteLength}`);
    assert.deepEqual(parts[i].body, file.subarray(start, end + 1), `part ${i}`);
  });
}
