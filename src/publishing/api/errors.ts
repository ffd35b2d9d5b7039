/**
 * The publishing API's errors: every one is `{ "error": "…" }` with its
 * status, never a page or a redirect (docs/publishing.md "Errors").
 */
import { HTTPException } from "hono/http-exception";
import { API_ERRORS, mapDomainError } from "../../http/errors.ts";
import { jsonResponse } from "../../http/json.ts";

/**
 * Headers of every publishing API answer, errors included (on top of the
 * global security headers); the API's first middleware sets them (mod.ts).
 */
export const PUBLISH_RESPONSE_HEADERS: Record<string, string> = {
  "cache-control": "no-store",
  "x-robots-tag": "noindex, nofollow",
};

/** The JSON answer of an error (src/http/errors.ts maps it); anything unknown is a logged 500. */
export function publishErrorResponse(error: Error): Response {
  if (error instanceof HTTPException && error.res !== undefined && error.status < 500) {
    // Hono's own middleware (bearer-auth, body-limit) answers with its prepared response.
    return error.getResponse();
  }
  const mapped = mapDomainError(error);
  if (mapped === null) console.error("publishing API internal error:", error);
  const { status, message, headers } = mapped ??
    { status: 500 as const, message: API_ERRORS.internal, headers: {} };
  return jsonResponse({ error: message }, status, headers);
}
