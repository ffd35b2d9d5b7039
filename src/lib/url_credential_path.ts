/**
 * Where a feed URL carries its credential (docs/feeds.md "A credential in the
 * URL"): the path segment after `/feeds/c/`. The access log writes that
 * segment as `[redacted]`, read the way the router reads the path (each
 * segment percent-decoded, so `/feeds/%63/…` is redacted too), and also any
 * segment that decodes to a credential's shape (`vk_…`) wherever it stands.
 */
export const URL_CREDENTIAL_PREFIX = "/feeds/c/";

const REDACTED = "[redacted]";
const CREDENTIAL_SHAPED = /^vk_/i;

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** `path` with the credential segment of a credential URL replaced by `[redacted]`. */
export function redactUrlCredential(path: string): string {
  if (!path.includes("%") && !/vk_/i.test(path) && !path.startsWith(URL_CREDENTIAL_PREFIX)) {
    return path;
  }
  const segments = path.split("/");
  const plain = segments.map(decoded);
  const credentialUrl = plain[0] === "" && plain[1] === "feeds" && plain[2] === "c";
  return segments.map((segment, i) =>
    (credentialUrl && i === 3) || CREDENTIAL_SHAPED.test(plain[i]) ? REDACTED : segment
  ).join("/");
}
