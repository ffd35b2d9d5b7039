import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { UploadFailureReason } from "../lib/metrics.ts";
import {
  EmptyUploadError,
  StorageFullError,
  StorageUnavailableError,
  UploadMismatchError,
  UploadTooLargeError,
} from "../storage/mod.ts";
import {
  ConflictError,
  KvWriteRefusedError,
  NotFoundError,
  ValidationError,
} from "../kv/errors.ts";
import { NotActiveError } from "../releases/releases.ts";
import { jsonResponse } from "./json.ts";
import { MultipartError } from "./multipart.ts";

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

/** What a request was refused for: one kind per error the map below knows. */
export type ErrorKind =
  /** An `ApiError`, or another `HTTPException` below 500 (Hono's middleware): its own status. */
  | "http"
  | "invalid"
  | "not_found"
  | "conflict"
  | "not_active"
  | "empty_upload"
  | "too_large"
  | "storage_full"
  | "storage_unavailable"
  | "kv_full"
  | "kv_read_only"
  | "unreadable_upload"
  | "upload_mismatch"
  | "client_gone";

/** An error as the HTTP surfaces answer it. */
export interface MappedError {
  kind: ErrorKind;
  status: ContentfulStatusCode;
  /** The message of a JSON answer, `{"error": message}`; an HTML page says it in its own words. */
  message: string;
  headers: Record<string, string>;
}

/**
 * The one domain-error → status map of the service: the client API, the
 * feeds, the publishing API, health and metrics answer it as JSON, the admin
 * UI as a page (admin/errors.tsx). Null: a failure of ours, a logged 500.
 */
export function mapDomainError(error: unknown): MappedError | null {
  const mapped = (kind: ErrorKind, status: ContentfulStatusCode, message: string) => ({
    kind,
    status,
    message,
    headers: {},
  });
  if (error instanceof ApiError) {
    return { kind: "http", status: error.status, message: error.message, headers: error.headers };
  }
  if (error instanceof HTTPException && error.status < 500) {
    return mapped("http", error.status as ContentfulStatusCode, error.message || "bad request");
  }
  if (error instanceof ValidationError) {
    return mapped("invalid", 400, `${error.field}: ${error.message}`);
  }
  if (error instanceof NotFoundError) return mapped("not_found", 404, error.message);
  if (error instanceof ConflictError) return mapped("conflict", 409, error.message);
  if (error instanceof NotActiveError) return mapped("not_active", 409, error.message);
  if (error instanceof EmptyUploadError) {
    return mapped("empty_upload", 400, "file is required and must not be empty");
  }
  if (error instanceof UploadTooLargeError) {
    return mapped(
      "too_large",
      413,
      `the file is larger than the upload limit of ${error.maxBytes} bytes`,
    );
  }
  if (error instanceof StorageFullError) {
    return mapped("storage_full", 507, "the server's storage ran out of space; nothing was stored");
  }
  if (error instanceof StorageUnavailableError) {
    return mapped(
      "storage_unavailable",
      503,
      "the artifact storage did not answer; nothing was stored, try again",
    );
  }
  if (error instanceof KvWriteRefusedError) {
    return error.reason === "full"
      ? mapped("kv_full", 507, "the database's disk is full; nothing was changed")
      : mapped(
        "kv_read_only",
        503,
        "the database does not accept changes (read-only); nothing was changed",
      );
  }
  if (error instanceof MultipartError) {
    return mapped("unreadable_upload", 400, `the upload could not be read: ${error.message}`);
  }
  if (error instanceof UploadMismatchError) return mapped("upload_mismatch", 422, error.message);
  if (isClientGone(error)) return mapped("client_gone", 400, "request cut off");
  return null;
}

/** Why an upload failed, for the upload metrics: by what the map above makes of its error. */
export function uploadFailureReason(error: unknown): UploadFailureReason {
  const kind = mapDomainError(error)?.kind;
  switch (kind) {
    case "too_large":
    case "storage_full":
    case "storage_unavailable":
      return kind;
    case "empty_upload":
      return "empty";
    case "http":
    case "invalid":
    case "unreadable_upload":
    case "upload_mismatch":
      return "invalid";
    default:
      return "error";
  }
}

/**
 * The JSON answer to an error outside the surfaces (health, metrics): the
 * mapped status and message, else the spec's 500.
 */
export function mapJsonError(error: Error): Response {
  const mapped = mapDomainError(error);
  if (mapped !== null) {
    return jsonResponse({ error: mapped.message }, mapped.status, mapped.headers);
  }
  console.error("internal error:", error);
  return jsonResponse({ error: API_ERRORS.internal }, 500);
}
