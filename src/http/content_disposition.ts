/**
 * The headers that present a stored artifact: `Content-Disposition:
 * attachment` for any file name and a `Content-Type` that is always a valid
 * header value. A plain token name is sent as `filename=<name>` exactly as
 * the spec shows; anything else gets an ASCII fallback in quotes plus the
 * RFC 5987 `filename*=UTF-8''…` form, so no raw quote, non-ASCII or control
 * character ever reaches the header. Both forms drop bidirectional controls
 * (`evil\u202Egpj.exe` would show as `evilexe.jpg`), and a name stored
 * before uploads were cut by code point (half a surrogate pair at its end)
 * still encodes: records are cleaned here, on the way out, never rewritten.
 */
import { isMediaType, stripBidiControls } from "../lib/header_text.ts";

/**
 * The `Content-Security-Policy` of every artifact download: an uploaded
 * file that a browser opens anyway (HTML, SVG, a script) runs in a sandbox
 * with an opaque origin, never as a page of this service.
 */
export const DOWNLOAD_CONTENT_SECURITY_POLICY = "sandbox";

/**
 * The `Content-Type` of a download from the admin origin: always bytes, so no
 * uploaded script or page is ever served as one where the admin pages live.
 */
export const ADMIN_DOWNLOAD_CONTENT_TYPE = "application/octet-stream";

const TOKEN_NAME = /^[A-Za-z0-9!#$&+.^_`|~-]+$/;

export function contentDisposition(storedName: string): string {
  const filename = stripBidiControls(storedName.toWellFormed());
  if (TOKEN_NAME.test(filename)) return `attachment; filename=${filename}`;
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeRfc5987(filename)}`;
}

/**
 * The `Content-Type` of a download: the release's type when it is an RFC
 * 9110 media type (every upload is checked for that), else, for a record
 * stored before that check, `application/octet-stream`.
 */
export function downloadContentType(storedType: string): string {
  return isMediaType(storedType) ? storedType : "application/octet-stream";
}

function encodeRfc5987(value: string): string {
  return encodeURIComponent(value).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
