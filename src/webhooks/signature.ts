/**
 * Signatures of webhook deliveries, as the Standard Webhooks spec has them
 * (docs/webhooks.md "Verifying a delivery"): `v1,<base64 HMAC-SHA256>` of
 * `<delivery id>.<timestamp>.<body>`, keyed with the bytes the secret's base64
 * after `whsec_` stands for; while a replaced secret still signs (a rotation),
 * one signature per secret, separated by spaces.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { webhookSecretKey as secretKey } from "../lib/webhook_secret.ts";

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
