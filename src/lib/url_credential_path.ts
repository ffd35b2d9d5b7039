/**
 * Where a feed URL carries its credential (docs/feeds.md "A credential in the
 * URL"): the path segment after `/feeds/c/`. The access log writes that
 * segment as `[redacted]`.
 */
export const URL_CREDENTIAL_PREFIX = "/feeds/c/";

const REDACTED = "[redacted]";

/** `path` with the credential segment of a credential URL replaced by `[redacted]`. */
export function redactUrlCredential(path: string): string {
  if (!path.startsWith(URL_CREDENTIAL_PREFIX)) return path;
  const end = path.indexOf("/", URL_CREDENTIAL_PREFIX.length);
  return URL_CREDENTIAL_PREFIX + REDACTED + (end === -1 ? "" : path.slice(end));
}
