/** Small helpers for random tokens and comparing secrets. */
import { hash as oneShotHash, timingSafeEqual } from "node:crypto";
import { TOKEN_BYTES } from "./limits.ts";

/** A random token of `bytes` bytes (256 bits by default), base64url without padding. */
export function randomToken(bytes: number = TOKEN_BYTES): string {
  return toBase64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}

export function toBase64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

export function fromBase64Url(text: string): Uint8Array {
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(binary, (char) => char.charCodeAt(0));
  } catch {
    return new Uint8Array(0);
  }
}

/** SHA-256 hex (node:crypto's one-shot `hash`: half the cost of `createHash` for short input). */
export function sha256Hex(text: string | Uint8Array): string {
  return oneShotHash("sha256", text, "hex");
}

/** Compares two strings in time that depends only on their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = new TextEncoder().encode(a);
  const right = new TextEncoder().encode(b);
  return left.byteLength === right.byteLength && timingSafeEqual(left, right);
}
