/**
 * Admin password hashing: PBKDF2-SHA256 through WebCrypto with a random
 * 16-byte salt per password. The stored form names the algorithm and the
 * iteration count (`pbkdf2-sha256$600000$<salt>$<hash>`, base64url), so the
 * count can be raised later without breaking existing hashes.
 */
import { timingSafeEqual } from "node:crypto";
import { fromBase64Url, toBase64Url } from "./secrets.ts";

export const PBKDF2_ITERATIONS = 600_000;
const SALT_BYTES = 16;
const HASH_BITS = 256;
const SCHEME = "pbkdf2-sha256";

export async function hashPassword(
  password: string,
  iterations: number = PBKDF2_ITERATIONS,
): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  const hash = await derive(password, salt, iterations);
  return [SCHEME, iterations, toBase64Url(salt), toBase64Url(hash)].join("$");
}

/** True when `password` matches `stored`; compares in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, rawIterations, rawSalt, rawHash] = stored.split("$");
  const iterations = Number(rawIterations);
  if (scheme !== SCHEME || !Number.isSafeInteger(iterations) || iterations < 1) return false;
  const expected = fromBase64Url(rawHash ?? "");
  const actual = await derive(password, fromBase64Url(rawSalt ?? ""), iterations);
  return expected.byteLength === actual.byteLength && timingSafeEqual(expected, actual);
}

/**
 * Spends the same time as a real check, for sign-ins with an unknown user
 * name, so response times do not tell which user names exist.
 */
export async function burnPasswordCheck(password: string): Promise<void> {
  await derive(password, new Uint8Array(SALT_BYTES), PBKDF2_ITERATIONS);
}

/** A random password of 24 URL-safe characters (144 bits). */
export function generatePassword(): string {
  return toBase64Url(crypto.getRandomValues(new Uint8Array(18)));
}

async function derive(password: string, salt: Uint8Array, iterations: number) {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(password),
    "PBKDF2",
    false,
    ["deriveBits"],
  );
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: salt as Uint8Array<ArrayBuffer>, iterations },
    key,
    HASH_BITS,
  );
  return new Uint8Array(bits);
}
