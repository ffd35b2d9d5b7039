import type { StatusCode } from "hono/utils/http-status";

export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** A JSON response with the spec's exact content type. */
export function jsonResponse(
  data: unknown,
  status: StatusCode = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(data), {
    status,
    headers: { "content-type": JSON_CONTENT_TYPE, ...headers },
  });
}
