/**
 * The signed-answer format, version 1 (docs/signing.md "The signed message"):
 * the header names and the message a key signs. Pure functions, so the tests
 * and the documentation's vectors use exactly what the service does.
 */

export const SIGNATURE_HEADER = "uds-signature";
export const SIGNATURE_DATE_HEADER = "uds-signature-date";
export const SIGNATURE_EXPIRES_HEADER = "uds-signature-expires";
export const CONTENT_SHA256_HEADER = "uds-content-sha256";

/** Where the public key set is served (outside /api/v1). */
export const KEY_SET_PATH = "/.well-known/uds-keys.json";

/** Where the key set's offline-root document is served (docs/signing.md "Offline root"). */
export const KEY_SET_ROOT_PATH = "/.well-known/uds-keys-root.json";

/** What one signature covers. */
export interface SignedFields {
  method: string;
  /** The request path as the service received it (still percent-encoded), without the query. */
  path: string;
  status: number;
  /** Unix seconds. */
  date: number;
  /** Unix seconds: a verifying client refuses the answer after it. */
  expires: number;
  kid: string;
  /** Lowercase hex SHA-256 of the body (a download: of the whole artifact). */
  sha256: string;
}

/** The UTF-8 text a key signs: eight lines joined by "\n", no newline at the end. */
export function signedMessage(fields: SignedFields): string {
  return [
    "uds-sig-v1",
    fields.method.toUpperCase(),
    fields.path,
    String(fields.status),
    String(fields.date),
    String(fields.expires),
    fields.kid,
    fields.sha256.toLowerCase(),
  ].join("\n");
}

/** `kid=<id>;sig=<base64url>` per key, comma-separated. */
export function formatSignatureHeader(signatures: Array<{ kid: string; sig: string }>): string {
  return signatures.map(({ kid, sig }) => `kid=${kid};sig=${sig}`).join(", ");
}
