/**
 * The publishing API's errors: every one is `{ "error": "…" }` with its
 * status, never a page or a redirect (docs/publishing.md "Errors").
 */
import { HTTPException } from "hono/http-exception";
import { ApiError, isClientGone } from "../../http/errors.ts";
import { jsonResponse } from "../../http/json.ts";
import { MultipartError } from "../../http/multipart.ts";
import {
  EmptyUploadError,
  StorageFullError,
  StorageUnavailableError,
  UploadTooLargeError,
} from "../../storage/mod.ts";
import {
  ConflictError,
  KvWriteRefusedError,
  NotActiveError,
  NotFoundError,
  ValidationError,
} from "../../store/mod.ts";

/** Headers of every publishing API answer (on top of the global security headers). */
export const PUBLISH_RESPONSE_HEADERS: Record<string, string> = {
  "cache-control": "no-store",
  "x-robots-tag": "noindex, nofollow",
};

/** The JSON answer of an error; `null` never: anything unknown is a 500 that is logged. */
export function publishErrorResponse(error: Error): Response {
  const json = (message: string, status: number, headers: Record<string, string> = {}) =>
    // deno-lint-ignore no-explicit-any
    jsonResponse({ error: message }, status as any, { ...PUBLISH_RESPONSE_HEADERS, ...headers });
  if (error instanceof ApiError) return json(error.message, error.status, error.headers);
  if (error instanceof HTTPException && error.res !== undefined && error.status < 500) {
    // Hono's own middleware (bearer-auth, body-limit) answers with its prepared response.
    const res = error.getResponse();
    for (const [name, value] of Object.entries(PUBLISH_RESPONSE_HEADERS)) {
      res.headers.set(name, value);
    }
    return res;
  }
  if (error instanceof HTTPException && error.status < 500) {
    return json(error.message || "bad request", error.status);
  }
  if (error instanceof ValidationError) return json(`${error.field}: ${error.message}`, 400);
  if (error instanceof NotFoundError) return json(error.message, 404);
  if (error instanceof ConflictError || error instanceof NotActiveError) {
    return json(error.message, 409);
  }
  if (error instanceof EmptyUploadError) return json("file is required and must not be empty", 400);
  if (error instanceof UploadTooLargeError) {
    return json(`the file is larger than the upload limit of ${error.maxBytes} bytes`, 413);
  }
  if (error instanceof StorageFullError) {
    return json("the server's storage ran out of space; nothing was stored", 507);
  }
  if (error instanceof StorageUnavailableError) {
    return json("the artifact storage did not answer; nothing was stored, try again", 503);
  }
  if (error instanceof KvWriteRefusedError) {
    return error.reason === "full"
      ? json("the database's disk is full; nothing was changed", 507)
      : json("the database does not accept changes (read-only); nothing was changed", 503);
  }
  if (error instanceof MultipartError) {
    return json(`the upload could not be read: ${error.message}`, 400);
  }
  if (isClientGone(error)) return json("request cut off", 400);
  console.error("publishing API internal error:", error);
  return json("internal server error", 500);
}
