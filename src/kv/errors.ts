/** Errors the store layer throws; the HTTP layers map them once. */

/** Input the store refuses; `field` names the offending form field. */
export class ValidationError extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
    this.name = "ValidationError";
  }
}

/** The record to change does not exist. */
export class NotFoundError extends Error {
  constructor(message = "not found") {
    super(message);
    this.name = "NotFoundError";
  }
}

/** An atomic commit kept conflicting after every retry. */
export class ConflictError extends Error {
  constructor(message = "the write kept conflicting; try again") {
    super(message);
    this.name = "ConflictError";
  }
}

/** Why the KV refused a write: its file or file system is read-only, or its disk is full. */
export type WriteRefusal = "read_only" | "full";

/** The KV refused a write (nothing was written); the HTTP layers answer 503 or 507. */
export class KvWriteRefusedError extends Error {
  constructor(readonly reason: WriteRefusal, cause: unknown) {
    super(
      reason === "full"
        ? "the database's disk is full"
        : "the database does not accept changes (read-only file or file system)",
      { cause },
    );
    this.name = "KvWriteRefusedError";
  }
}

/** What SQLite (under Deno KV) says when a write is refused for good, not for contention. */
export function writeRefusalOf(error: unknown): WriteRefusal | null {
  const message = error instanceof Error ? error.message : String(error);
  if (/disk is full|database or disk is full|no space left/i.test(message)) return "full";
  if (/readonly database|read-only|attempt to write a readonly/i.test(message)) {
    return "read_only";
  }
  return null;
}
