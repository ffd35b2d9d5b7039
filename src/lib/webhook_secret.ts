/**
 * The form of a webhook endpoint's secret, as the Standard Webhooks spec has
 * it (docs/webhooks.md "Verifying a delivery"): `whsec_` and the standard
 * base64 of the HMAC key, 24 to 64 bytes; this service makes 32.
 */
import { Buffer } from "node:buffer";

const PREFIX = "whsec_";
const NEW_KEY_BYTES = 32;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A new secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  const key = crypto.getRandomValues(new Uint8Array(NEW_KEY_BYTES));
  return PREFIX + Buffer.from(key).toString("base64");
}

/** The HMAC key a secret stands for, or null when it is not of the spec's form. */
export function webhookSecretKey(secret: string): Uint8Array | null {
  if (!secret.startsWith(PREFIX)) return null;
  const base64 = secret.slice(PREFIX.length);
  if (!BASE64.test(base64)) return null;
  const key = Buffer.from(base64, "base64");
  return key.length >= 24 && key.length <= 64 ? new Uint8Array(key) : null;
}

/** Whether a secret can sign deliveries (see webhookSecretKey). */
export function isSigningSecret(secret: string | null): secret is string {
  return secret !== null && webhookSecretKey(secret) !== null;
}
