/** Field rules of `../shared/spec/admin-contract.md`, shared by the store and the admin forms. */
import { ValidationError } from "../kv/errors.ts";
import { cutToCodePoints, isMediaType, stripControls } from "../lib/header_text.ts";
import {
  CONTENT_TYPE_MAX_LENGTH,
  FILENAME_MAX_LENGTH,
  SLUG_MAX_LENGTH,
  SLUG_PATTERN,
  TAG_MAX_LENGTH,
  TAGS_MAX_COUNT,
} from "../lib/limits.ts";

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;
const DATETIME_LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?$/;

/**
 * A time as one ISO string (so that stored times compare as strings): an RFC
 * 3339 time with offset, or, with `localAsUtc`, also an HTML datetime-local
 * value read as UTC. Dates that `Date` would roll over (2026-02-30) and
 * out-of-range times are refused with `message` for `field`.
 */
export function requireTime(
  field: string,
  raw: string,
  { localAsUtc = false, message = `${field} must be a date and time` }: {
    localAsUtc?: boolean;
    message?: string;
  } = {},
): string {
  const text = raw.trim();
  const local = localAsUtc ? DATETIME_LOCAL.exec(text) : null;
  const parts = local ?? RFC3339.exec(text);
  const invalid = new ValidationError(field, message);
  if (parts === null) throw invalid;
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map((part) => +(part ?? 0));
  const calendar = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  if (
    calendar.getUTCFullYear() !== year || calendar.getUTCMonth() !== month - 1 ||
    calendar.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59
  ) {
    throw invalid;
  }
  const ms = Date.parse(local ? `${text}Z` : text.replace(/[t ]/i, "T"));
  if (Number.isNaN(ms)) throw invalid;
  return new Date(ms).toISOString();
}

/**
 * A key's `expires_at`: empty (or null) for none; an RFC 3339 time with
 * offset, or an HTML datetime-local value read as UTC. Returns an ISO time or null.
 */
export function parseExpiresAt(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined || raw.trim() === "") return null;
  return requireTime("expires_at", raw, {
    localAsUtc: true,
    message: "expires_at must be a time like 2026-12-31T23:59:59Z or 2026-12-31T23:59 (UTC)",
  });
}

/** Splits a comma-separated field: trimmed, lowercased, no empties, no duplicates. */
export function parseList(raw: string | readonly string[] | undefined): string[] {
  const parts = typeof raw === "string" ? raw.split(",") : (raw ?? []);
  const seen = new Set<string>();
  for (const part of parts) {
    const item = part.trim().toLowerCase();
    if (item) seen.add(item);
  }
  return [...seen];
}

/** Derives a slug from a display name ("My App 2" → "my-app-2"). */
export function slugify(name: string): string {
  return name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, SLUG_MAX_LENGTH)
    .replace(/-+$/, "");
}

export function requireSlug(slug: string): string {
  if (!SLUG_PATTERN.test(slug)) {
    throw new ValidationError(
      "slug",
      `slug must be 1 to ${SLUG_MAX_LENGTH} characters of lowercase letters, digits and -`,
    );
  }
  return slug;
}

/** Trims `value` and checks its length; `min` 1 makes it required. */
export function requireText(
  field: string,
  value: string | undefined,
  { min = 0, max }: { min?: number; max: number },
): string {
  const text = (value ?? "").trim();
  if (text.length < min) throw new ValidationError(field, `${field} is required`);
  if (text.length > max) {
    throw new ValidationError(field, `${field} must be at most ${max} characters`);
  }
  return text;
}

export function requireTags(field: string, tags: readonly string[]): string[] {
  const list = parseList(tags);
  if (list.length > TAGS_MAX_COUNT) {
    throw new ValidationError(field, `at most ${TAGS_MAX_COUNT} tags are allowed`);
  }
  for (const tag of list) {
    if (tag.length > TAG_MAX_LENGTH || /[\x00-\x1f\x7f]/.test(tag)) {
      throw new ValidationError(
        field,
        `tag "${tag}" must be at most ${TAG_MAX_LENGTH} printable characters`,
      );
    }
  }
  return list;
}

/**
 * The base name of an uploaded file: path parts, control characters (line
 * separators and bidi controls included) dropped; cut to the length limit
 * by code point, never inside a surrogate pair.
 */
export function safeFilename(raw: string | undefined): string {
  const base = (raw ?? "").split(/[\\/]/).pop() ?? "";
  const clean = cutToCodePoints(stripControls(base).trim(), FILENAME_MAX_LENGTH).trim();
  return clean === "" || clean === "." || clean === ".." ? "artifact" : clean;
}

/** A MIME type safe to send back as a header; anything else becomes octet-stream. */
export function safeContentType(raw: string | undefined): string {
  const type = (raw ?? "").trim();
  return type.length <= CONTENT_TYPE_MAX_LENGTH && isMediaType(type)
    ? type
    : "application/octet-stream";
}

/**
 * The upload check of a part's Content-Type: absent or empty is
 * application/octet-stream; anything else must be an RFC 9110 media type
 * (see isMediaType) of at most CONTENT_TYPE_MAX_LENGTH characters.
 */
export function requireMediaType(field: string, raw: string | undefined): string {
  const type = (raw ?? "").trim();
  if (type === "") return "application/octet-stream";
  if (type.length <= CONTENT_TYPE_MAX_LENGTH && isMediaType(type)) return type;
  const shown = JSON.stringify(cutToCodePoints(type, 80));
  throw new ValidationError(
    field,
    `the file's content type ${shown} is not a valid media type: it must be type/subtype ` +
      `(such as application/zip), optionally with ; name=value parameters, in printable ASCII ` +
      `of at most ${CONTENT_TYPE_MAX_LENGTH} characters`,
  );
}
