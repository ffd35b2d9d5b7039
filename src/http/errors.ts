import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { jsonResponse } from "./json.ts";

/** An error with a message that is safe to show to the client as `{"error": message}`. */
export class ApiError extends HTTPException {
  constructor(
    status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(status, { message });
    this.name = "ApiError";
  }
}

/** The exact error strings of ../shared/spec/client-api.md "7. Errors" (and of the extensions beyond it). */
export const API_ERRORS = {
  invalidReleaseId: "invalid release id",
  missingKey: "missing bearer api key",
  invalidKey: "invalid api key",
  permissionDenied: "api key permission denied",
  resourceNotFound: "resource not found",
  releaseNotFound: "release not found",
  rateLimited: "rate limit exceeded",
  internal: "internal server error",
  keyServiceUnavailable: "api key service unavailable",
  methodNotAllowed: "method not allowed",
  /** 503 of a download while the artifact storage does not answer (an extension beyond v1). */
  storageUnavailable: "artifact storage unavailable",
  /** 416 of a download `Range` that starts at or beyond the end (an extension beyond v1). */
  rangeNotSatisfiable: "range not satisfiable",
} as const;

/**
 * Whether `error` means the client went away while its request was being read
 * (a dropped connection mid-body): a refused request, not a fault of ours.
 */
export function isClientGone(error: unknown): boolean {
  return error instanceof Deno.errors.BadResource ||
    error instanceof Deno.errors.ConnectionReset ||
    error instanceof Deno.errors.ConnectionAborted ||
    error instanceof Deno.errors.BrokenPipe ||
    error instanceof Deno.errors.UnexpectedEof;
}

/**
 * The JSON answer to an error outside both surfaces (health, metrics): the
 * message of an error meant for the client, else the spec's 500.
 */
export function mapJsonError(error: Error): Response {
  if (error instanceof ApiError) {
    return jsonResponse({ error: error.message }, error.status, error.headers);
  }
  if (error instanceof HTTPException && error.status < 500) {
    return jsonResponse({ error: error.message || "bad request" }, error.status);
  }
  if (isClientGone(error)) return jsonResponse({ error: "request cut off" }, 400);
  console.error("internal error:", error);
  return jsonResponse({ error: API_ERRORS.internal }, 500);
}
