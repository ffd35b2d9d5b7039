/**
 * Signatures of webhook deliveries, as the Standard Webhooks spec has them
 * (docs/webhooks.md "Verifying a delivery"): `v1,<base64 HMAC-SHA256>` of
 * `<delivery id>.<timestamp>.<body>`, keyed with the bytes the secret's base64
 * after `whsec_` stands for; while a replaced secret still signs (a rotation),
 * one signature per secret, separated by spaces.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";

export const SIGNATURE_HEADER = "webhook-signature";
export const DELIVERY_ID_HEADER = "webhook-id";
export const TIMESTAMP_HEADER = "webhook-timestamp";
export const EVENT_HEADER = "webhook-event";

export interface SignedParts {
  deliveryId: string;
  /** Seconds since the Unix epoch, as sent in the timestamp header. */
  timestamp: number;
  body: string;
}

const SECRET_PATTERN = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/**
 * The HMAC key of a secret: the bytes of the standard base64 after `whsec_`,
 * 24 to 64 of them as the spec asks; null for anything else.
 */
export function secretKey(secret: string): Uint8Array | null {
  const base64 = SECRET_PATTERN.exec(secret)?.[1];
  if (base64 === undefined) return null;
  const key = Buffer.from(base64, "base64");
  return key.length >= 24 && key.length <= 64 ? new Uint8Array(key) : null;
}

/** Whether a secret can sign deliveries (see secretKey). */
export function isSigningSecret(secret: string | null): secret is string {
  return secret !== null && secretKey(secret) !== null;
}

function signatureWith(key: Uint8Array, parts: SignedParts): string {
  const mac = createHmac("sha256", key)
    .update(`${parts.deliveryId}.${parts.timestamp}.${parts.body}`)
    .digest("base64");
  return `v1,${mac}`;
}

/**
 * The signature header: `v1,<base64>` under each of `secrets` that can sign
 * (the current one first), separated by spaces; "" when none can.
 */
export function signDelivery(secrets: readonly string[], parts: SignedParts): string {
  return secrets.map(secretKey)
    .filter((key) => key !== null)
    .map((key) => signatureWith(key, parts))
    .join(" ");
}

/** Whether any `v1` signature of `header` is the one of `parts` under `secret` (constant time). */
export function verifyDelivery(secret: string, parts: SignedParts, header: string): boolean {
  const key = secretKey(secret);
  if (key === null) return false;
  const expected = new TextEncoder().encode(signatureWith(key, parts));
  return header.split(" ").some((signature) => {
    const given = new TextEncoder().encode(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** The headers of one delivery attempt, signed with each of `secrets` that can sign. */
export function deliveryHeaders(
  secrets: readonly string[],
  parts: SignedParts & { event: string },
): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "update-service-webhooks/1",
    [DELIVERY_ID_HEADER]: parts.deliveryId,
    [TIMESTAMP_HEADER]: String(parts.timestamp),
    [EVENT_HEADER]: parts.event,
    [SIGNATURE_HEADER]: signDelivery(secrets, parts),
  };
}
