/**
 * Every field limit and shared pattern, once. The store validates with these,
 * the API and admin routes guard lookups with them, and the admin views take
 * their `maxlength` from them.
 *
 * Lengths count UTF-16 code units (JavaScript's `length`, what `maxlength`
 * counts too). Deno KV stores a string in at most 2 bytes per unit, and one
 * value may take at most 65,536 bytes, so each record's limits are chosen to
 * fit that even when every field is full of non-Latin characters:
 *
 * - release: notes 2 × 30,000 + version, build, file name, type ≈ 61.5 KB;
 * - project: name 2 × 200 + description 2 × 5,000 + 50 tags × 2 × 64 ≈ 17 KB;
 * - API key: name 2 × 200 + 50 tags × 2 × 64 + 1,000 project ids × ≤ 10 B ≈ 17 KB.
 *
 * `tests/client_input_test.ts` stores a record with every field at its limit.
 */

/**
 * A stored record id in a URL: 1 to 15 digits, one fewer than
 * `Number.MAX_SAFE_INTEGER` has, so every id that matches is a safe integer.
 */
export const ID_MAX_DIGITS = String(Number.MAX_SAFE_INTEGER).length - 1;
export const ID_PATTERN = new RegExp(`^\\d{1,${ID_MAX_DIGITS}}$`);

/**
 * An id as a path gives it: its number; null for digits too long to be an id
 * (no record has it: not found); "invalid" for anything but digits.
 */
export function parseIdParam(raw: string): number | null | "invalid" {
  if (ID_PATTERN.test(raw)) return Number(raw);
  return /^\d+$/.test(raw) ? null : "invalid";
}

/** A project slug: lowercase letters, digits and `-`, 1 to 64 characters. */
export const SLUG_MAX_LENGTH = 64;
/** The slug's characters as a regular expression class body (the admin form's `pattern` too). */
export const SLUG_CHARACTERS = "a-z0-9\\-";
export const SLUG_PATTERN = new RegExp(`^[${SLUG_CHARACTERS}]{1,${SLUG_MAX_LENGTH}}$`);

/** True when `slug` could name a project (anything else is never looked up). */
export function isSlug(slug: string): boolean {
  return SLUG_PATTERN.test(slug);
}

/** An artifact's storage key: the UUID its file (or object) is named after. */
export const STORAGE_KEY_PATTERN = /^[0-9a-f-]{36}$/;

/** The random bytes of a token (session ids, the sign-in CSRF token, API key secrets): 256 bits. */
export const TOKEN_BYTES = 32;
/** A token's length in base64url without padding: 4 characters for every 3 bytes, rounded up (43). */
export const TOKEN_LENGTH = Math.ceil(TOKEN_BYTES * 4 / 3);
export const TOKEN_PATTERN = new RegExp(`^[A-Za-z0-9_-]{${TOKEN_LENGTH}}$`);

/** An admin user name (APP_ADMIN_USERNAME and stored users). */
export const USERNAME_MAX_LENGTH = 64;
export const USERNAME_PATTERN = new RegExp(`^[A-Za-z0-9._@-]{1,${USERNAME_MAX_LENGTH}}$`);

/** An admin's new password (the password page; `src/lib/passwords.ts` hashes it). */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 1024;

/**
 * An admin password: what the password form accepts, and what APP_ADMIN_PASSWORD
 * must be for the first admin.
 */
export const ADMIN_PASSWORD_MIN_LENGTH = 12;
export const ADMIN_PASSWORD_MAX_LENGTH = 1024;

/** Display names of projects and API keys. */
export const NAME_MAX_LENGTH = 200;
/** A project's description. */
export const DESCRIPTION_MAX_LENGTH = 5000;
/** A release's version and build. */
export const VERSION_MAX_LENGTH = 128;
/** A release's notes. */
export const RELEASE_NOTES_MAX_LENGTH = 30_000;
/** A stored artifact's file name. */
export const FILENAME_MAX_LENGTH = 255;
/** A stored artifact's content type. */
export const CONTENT_TYPE_MAX_LENGTH = 200;

/** One tag, and the number of tags on a project or in a key's tag list. */
export const TAG_MAX_LENGTH = 64;
export const TAGS_MAX_COUNT = 50;

/** Projects named in one API key's allow or deny list. */
export const SCOPE_PROJECTS_MAX_COUNT = 1000;

/** A client address as stored with sessions, audit entries and sign-in counts. */
export const ADDRESS_MAX_LENGTH = 128;
