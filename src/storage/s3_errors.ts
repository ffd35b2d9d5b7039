/** What an S3 call's failure means: a one-line description, not found, or no answer at all. */
import { StorageUnavailableError } from "./unavailable.ts";

/** One line for logs and errors: HTTP status, error name and message. */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const name = error.name !== "Error" ? error.name : "";
  const text = [status && `HTTP ${status}`, name, error.message !== name && error.message]
    .filter(Boolean).join(" ");
  return text.replace(/\s+/g, " ").slice(0, 300) || "unknown error";
}

export function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NotFound" || e?.name === "NoSuchKey" || e?.$metadata?.httpStatusCode === 404;
}

/** Network error codes of a store that does not answer (node:http and fetch). */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * Whether an S3 call failed because the store did not answer (a timeout, a
 * refused or cut connection, a 5xx) rather than with an answer (404, 403).
 */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof StorageUnavailableError) return true;
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return true;
  if (typeof e?.code === "string" && UNREACHABLE_CODES.has(e.code)) return true;
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  // fetch: "error sending request", "connection closed before message completed", …
  return error instanceof TypeError && /request|connect|network/i.test(error.message);
}
