/**
 * HMAC-SHA256 signatures of webhook deliveries (docs/webhooks.md "Verifying a
 * delivery"): the signed text is `<delivery id>.<timestamp>.<body>`.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

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

/** `sha256=<hex>`: the HMAC-SHA256 of the signed text under `secret`. */
export function signDelivery(secret: string, parts: SignedParts): string {
  const mac = createHmac("sha256", secret)
    .update(`${parts.deliveryId}.${parts.timestamp}.${parts.body}`)
    .digest("hex");
  return `sha256=${mac}`;
}

/** Whether `header` is the signature of `parts` under `secret` (constant time). */
export function verifyDelivery(secret: string, parts: SignedParts, header: string): boolean {
  const expected = new TextEncoder().encode(signDelivery(secret, parts));
  const given = new TextEncoder().encode(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The headers of one delivery attempt. */
export function deliveryHeaders(
  secret: string,
  parts: SignedParts & { event: string },
): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "update-service-webhooks/1",
    [DELIVERY_ID_HEADER]: parts.deliveryId,
    [TIMESTAMP_HEADER]: String(parts.timestamp),
    [EVENT_HEADER]: parts.event,
    [SIGNATURE_HEADER]: signDelivery(secret, parts),
  };
}
