/** Field rules of `admin-contract.md`, shared by the store and the admin forms. */
import { ValidationError } from "./errors.ts";
import { cutToCodePoints, isMediaType, stripControls } from "../lib/header_text.ts";
import {
  CONTENT_TYPE_MAX_LENGTH,
  FILENAME_MAX_LENGTH,
  SLUG_MAX_LENGTH,
  SLUG_PATTERN,
  TAG_MAX_LENGTH,
  TAGS_MAX_COUNT,
} from "../lib/limits.ts";

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
