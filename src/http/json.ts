import type { StatusCode } from "hono/utils/http-status";

export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

const encoder = new TextEncoder();

/** A JSON response with the spec's exact content type. */
export function jsonResponse(
  data: unknown,
  status: StatusCode = 200,
  headers: Record<string, string> = {},
): Response {
  return jsonText(JSON.stringify(data), status, headers);
}

/**
 * A response from JSON text that is already serialized. It carries its
 * Content-Length, which the access log reports as the bytes sent.
 */
export function jsonText(
  json: string,
  status: StatusCode = 200,
  headers: Record<string, string> = {},
): Response {
  return jsonBytes(encoder.encode(json), status, headers);
}

/** A response from encoded JSON; `body` may be shared between responses (it is never written). */
export function jsonBytes(
  body: Uint8Array<ArrayBuffer>,
  status: StatusCode = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(body, {
    status,
    headers: {
      "content-type": JSON_CONTENT_TYPE,
      "content-length": String(body.byteLength),
      ...headers,
    },
  });
}
