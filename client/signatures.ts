/**
 * Verifies signed answers (docs/signing.md) with WebCrypto's Ed25519, against
 * a key set pinned at install: an answer whose body, path, status or hash was
 * changed, or that is past its expiry, is refused (FailureKind `signature`).
 * The client imports nothing of the service: this is a second implementation.
 */
import { UpdateClientError } from "./http.ts";

export interface PublishedKey {
  kid: string;
  alg: string;
  public_key: string;
  status: "pending" | "active" | "retired";
  retired_at?: string | null;
}

export interface KeySet {
  keys: PublishedKey[];
}

export const KEY_SET_PATH = "/.well-known/uds-keys.json";

const encoder = new TextEncoder();

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)), (c) => c.charCodeAt(0));
}

export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** What the client knows of an answer besides its headers. */
export interface Answer {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  /** The body's SHA-256 the client computed (a download: the metadata's `checksum_sha256`). */
  sha256: string;
}

function refuse(path: string, why: string): never {
  throw new UpdateClientError("signature", `bad signature on ${path}: ${why}`);
}

/** Checks `answer` against `keys` at `nowMs`; returns the key id that verified it. */
export async function verifyAnswer(
  answer: Answer,
  keys: readonly PublishedKey[],
  nowMs = Date.now(),
): Promise<string> {
  const { headers, path } = answer;
  const date = headers.get("uds-signature-date");
  const expires = headers.get("uds-signature-expires");
  const sha256 = headers.get("uds-content-sha256");
  const header = headers.get("uds-signature");
  if (!date || !expires || !sha256 || !header) refuse(path, "the answer is not signed");
  if (sha256 !== answer.sha256.toLowerCase()) refuse(path, "the body is not the one signed");
  if (nowMs / 1000 > Number(expires)) refuse(path, `the answer expired at ${expires}`);
  if (Number(date) > nowMs / 1000 + 300) refuse(path, "the answer is dated in the future");
  for (const part of header.split(",")) {
    const match = /^\s*kid=([^;\s]+);sig=([A-Za-z0-9_-]+)\s*$/.exec(part);
    const key = match && keys.find((k) => k.kid === match[1] && k.status !== "pending");
    if (!match || !key) continue;
    if (key.retired_at && Number(date) * 1000 > Date.parse(key.retired_at)) continue;
    const message = [
      "uds-sig-v1",
      answer.method,
      path,
      String(answer.status),
      date,
      expires,
      key.kid,
      answer.sha256.toLowerCase(),
    ].join("\n");
    const publicKey = await crypto.subtle.importKey(
      "raw",
      fromBase64url(key.public_key),
      { name: "Ed25519" },
      false,
      ["verify"],
    );
    const ok = await crypto.subtle.verify(
      { name: "Ed25519" },
      publicKey,
      fromBase64url(match[2]),
      encoder.encode(message),
    );
    if (ok) return key.kid;
  }
  refuse(path, "no signature of a pinned key verifies");
}

/**
 * The service's current key set, accepted when it is signed by a key of
 * `pinned` (a rotation: the new key is published and signs beside the old
 * one before the old one retires). Store the result as the new pin.
 */
export async function fetchKeySet(
  options: { baseUrl: string; fetch?: typeof fetch },
  pinned: readonly PublishedKey[],
  nowMs = Date.now(),
): Promise<KeySet> {
  const res = await (options.fetch ?? fetch)(new URL(KEY_SET_PATH, options.baseUrl));
  const body = new Uint8Array(await res.arrayBuffer());
  await verifyAnswer(
    {
      method: "GET",
      path: KEY_SET_PATH,
      status: res.status,
      headers: res.headers,
      sha256: await sha256Hex(body),
    },
    pinned,
    nowMs,
  );
  return JSON.parse(new TextDecoder().decode(body)) as KeySet;
}
