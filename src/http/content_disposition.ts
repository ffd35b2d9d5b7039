/**
 * `Content-Disposition: attachment` for any file name. A plain token name is
 * sent as `filename=<name>` exactly as the spec shows; anything else gets an
 * ASCII fallback in quotes plus the RFC 5987 `filename*=UTF-8''…` form, so no
 * raw quote, non-ASCII or control character ever reaches the header.
 */
const TOKEN_NAME = /^[A-Za-z0-9!#$&+.^_`|~-]+$/;

export function contentDisposition(filename: string): string {
  if (TOKEN_NAME.test(filename)) return `attachment; filename=${filename}`;
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeRfc5987(filename)}`;
}

function encodeRfc5987(value: string): string {
  return encodeURIComponent(value).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
