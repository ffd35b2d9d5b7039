/** Assertions on HTTP responses: the spec's headers, JSON bodies and error objects. */
import assert from "node:assert/strict";

/** The headers ../shared/spec/client-api.md "Response headers" puts on every response. */
export function assertSecurityHeaders(res: Response, { hsts = false } = {}) {
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  assert.equal(res.headers.get("x-frame-options"), "DENY");
  assert.equal(res.headers.get("referrer-policy"), "no-referrer");
  assert.equal(
    res.headers.get("strict-transport-security"),
    hsts ? "max-age=31536000" : null,
  );
}

/** The headers ../shared/spec/client-api.md "Response headers" puts on protected API responses. */
export function assertProtectedHeaders(res: Response) {
  assert.equal(res.headers.get("cache-control"), "no-store, private, max-age=0");
  assert.equal(res.headers.get("pragma"), "no-cache");
  assert.equal(res.headers.get("expires"), "0");
  assert.equal(res.headers.get("vary"), "Authorization");
  assert.equal(res.headers.get("x-robots-tag"), "noindex, nofollow");
}

/** Asserts a JSON body with the exact content type, and returns it. */
// deno-lint-ignore no-explicit-any
export async function readJson(res: Response, status: number): Promise<any> {
  const text = await res.text();
  assert.equal(res.status, status, `status of ${text}`);
  assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
  return JSON.parse(text);
}

/** Asserts the spec's error object `{ "error": message }` and nothing else. */
export async function assertError(res: Response, status: number, message: string) {
  assert.deepEqual(await readJson(res, status), { error: message });
}
