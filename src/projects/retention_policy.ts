/** A project's retention policy: its fields, their limits and how form or API values become one. */
import { ValidationError } from "../kv/errors.ts";

/**
 * A project's retention policy: keep the newest `keep_active` active releases
 * and/or delete archived releases older than `archived_max_days` days (null:
 * that rule is off). The latest release and drafts are never deleted.
 */
export interface RetentionPolicy {
  keep_active: number | null;
  archived_max_days: number | null;
}

/** The largest `keep_active` and `archived_max_days` accepted. */
export const RETENTION_MAX = 100_000;

/** A policy that deletes nothing. */
export const NO_RETENTION: RetentionPolicy = { keep_active: null, archived_max_days: null };

export function isRetentionOff(policy: RetentionPolicy): boolean {
  return policy.keep_active === null && policy.archived_max_days === null;
}

function readLimit(field: string, raw: string | number | null | undefined): number | null {
  const text = String(raw ?? "").trim();
  if (text === "") return null;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > RETENTION_MAX) {
    throw new ValidationError(
      field,
      `${field} must be a whole number from 1 to ${RETENTION_MAX}, or empty for none`,
    );
  }
  return Number(text);
}

/** A policy from form or API values (empty: that rule is off). */
export function parseRetentionPolicy(
  input: { keep_active?: string | number | null; archived_max_days?: string | number | null },
): RetentionPolicy {
  return {
    keep_active: readLimit("keep_active", input.keep_active),
    archived_max_days: readLimit("archived_max_days", input.archived_max_days),
  };
}
