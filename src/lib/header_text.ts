/**
 * Rules for text that ends up in an HTTP header of a download (file names,
 * media types), shared by the upload check (src/projects/validate.ts) and the
 * download answer (src/http/content_disposition.ts), which also cleans
 * records stored before these rules.
 */

/**
 * Bidirectional controls: LRM, RLM, ALM, the embeddings and overrides
 * (U+202A–U+202E) and the isolates (U+2066–U+2069). `evil\u202Egpj.exe`
 * shows as `evilexe.jpg`.
 */
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** C0 and C1 controls, DEL, and the line and paragraph separators. */
const LINE_BREAKING_CONTROLS = /[\x00-\x1f\x7f-\x9f\u2028\u2029]/g;

/** `text` without bidirectional control characters. */
export function stripBidiControls(text: string): string {
  return text.replace(BIDI_CONTROLS, "");
}

/** `text` without control characters, line or paragraph separators and bidi controls. */
export function stripControls(text: string): string {
  return stripBidiControls(text.replace(LINE_BREAKING_CONTROLS, ""));
}

/**
 * The longest start of `text` of at most `maxUnits` UTF-16 code units that
 * ends on a code point boundary: a surrogate pair is kept whole or dropped,
 * never cut in half. Lone surrogates already in `text` become U+FFFD.
 */
export function cutToCodePoints(text: string, maxUnits: number): string {
  const whole = text.toWellFormed();
  if (whole.length <= maxUnits) return whole;
  const last = whole.charCodeAt(maxUnits - 1);
  const splitsPair = last >= 0xd800 && last <= 0xdbff;
  return whole.slice(0, splitsPair ? maxUnits - 1 : maxUnits);
}

// RFC 9110 section 5.6.2 (token), 5.6.4 (quoted-string) and 8.3.1 (media-type),
// with printable ASCII only inside quotes (obs-text is obsolete and is what
// breaks header encoders and S3 signatures).
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED_STRING = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\t \\x21-\\x7e])*"';
const PARAMETER = `${TOKEN}=(?:${TOKEN}|${QUOTED_STRING})`;
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${PARAMETER})*$`);

/**
 * True for an RFC 9110 media type: `type/subtype` tokens with optional
 * `; name=value` parameters (token or quoted-string values), spaces and tabs
 * only as separators. So no CR, LF, U+2028 or non-ASCII text: every value
 * that passes is a valid header value everywhere (Deno, nginx, S3).
 */
export function isMediaType(value: string): boolean {
  return MEDIA_TYPE.test(value);
}
