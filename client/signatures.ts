/**
 * Verifies signed answers (docs/signing.md) with WebCrypto's Ed25519, against
 * a key set pinned at install: an answer whose body, path, status or hash was
 * changed, or that is past its expiry, is refused (FailureKind `signature`).
 * The client imports nothing of the service: this is a second implementation.
 */
import { installIdHeader, UpdateClientError } from "./http.ts";

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
export const KEY_SET_ROOT_PATH = "/.well-known/uds-keys-root.json";

const encoder = new TextEncoder();

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)), (c) => c.charCodeAt(0));
}

export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The id of a raw Ed25519 public key (base64url): `k` and 16 hex digits of its SHA-256. */
export async function keyIdOf(publicKey: string): Promise<string> {
  return `k${(await sha256Hex(fromBase64url(publicKey))).slice(0, 16)}`;
}

async function ed25519Verify(
  publicKey: string,
  signature: string,
  message: string,
): Promise<boolean> {
  const key = await crypto.subtle.importKey(
    "raw",
    fromBase64url(publicKey),
    { name: "Ed25519" },
    false,
    ["verify"],
  );
  return await crypto.subtle.verify(
    { name: "Ed25519" },
    key,
    fromBase64url(signature),
    encoder.encode(message),
  );
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
    if (await ed25519Verify(key.public_key, match[2], message)) return key.kid;
  }
  refuse(path, "no signature of a pinned key verifies");
}

/**
 * The service's current key set, accepted when it is signed by a key of
 * `pinned` (a rotation: the new key is published and signs beside the old
 * one before the old one retires). Store the result as the new pin.
 */
export async function fetchKeySet(
  options: KeySetOptions,
  pinned: readonly PublishedKey[],
  nowMs = Date.now(),
): Promise<KeySet> {
  const res = await get(options, KEY_SET_PATH);
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

/** What fetching a key set needs of the client's options. */
export interface KeySetOptions {
  baseUrl: string;
  installId?: string;
  fetch?: typeof fetch;
}

async function get(options: KeySetOptions, path: string) {
  const url = new URL(path, options.baseUrl);
  try {
    return await (options.fetch ?? fetch)(url, {
      headers: installIdHeader(options),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new UpdateClientError(
      "network",
      `${url.host}${url.pathname}: ${(error as Error).message}`,
    );
  }
}

/**
 * The signing keys an offline root vouches for (docs/signing.md "Offline
 * root"): the service's root document, accepted when one of `roots` (raw
 * public keys, base64url, pinned at install) signed it and it has not
 * expired. Use the result as `trustedKeys`.
 */
export async function fetchRootKeySet(
  options: KeySetOptions,
  roots: readonly string[],
  nowMs = Date.now(),
): Promise<KeySet> {
  const res = await get(options, KEY_SET_ROOT_PATH);
  if (res.status === 404) {
    await res.body?.cancel();
    refuse(KEY_SET_ROOT_PATH, "the service publishes no root-signed key set");
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new UpdateClientError("server", `${KEY_SET_ROOT_PATH} answered ${res.status}`);
  }
  let document: { payload?: unknown; signatures?: Array<{ kid?: unknown; sig?: unknown }> };
  try {
    document = await res.json();
  } catch {
    refuse(KEY_SET_ROOT_PATH, "the root document is not JSON");
  }
  const { payload, signatures } = document;
  if (typeof payload !== "string" || !Array.isArray(signatures)) {
    refuse(KEY_SET_ROOT_PATH, "the root document has no payload or signatures");
  }
  let verified = false;
  for (const root of roots) {
    const kid = await keyIdOf(root);
    for (const entry of signatures) {
      if (entry?.kid !== kid || typeof entry.sig !== "string") continue;
      if (await ed25519Verify(root, entry.sig, `uds-root-v1\n${payload}`)) verified = true;
    }
  }
  if (!verified) refuse(KEY_SET_ROOT_PATH, "no signature of a pinned root key verifies");
  const signed = JSON.parse(new TextDecoder().decode(fromBase64url(payload))) as {
    type?: string;
    signed_at?: number;
    expires?: number;
    keys?: Array<{ kid: string; alg: string; public_key: string }>;
  };
  if (signed.type !== "uds-key-set-root" || !Array.isArray(signed.keys)) {
    refuse(KEY_SET_ROOT_PATH, "the root document's payload is not a uds-key-set-root");
  }
  if (!(nowMs / 1000 <= Number(signed.expires))) {
    refuse(
      KEY_SET_ROOT_PATH,
      `the root-signed key set expired at ${new Date(Number(signed.expires) * 1000).toISOString()}`,
    );
  }
  if (Number(signed.signed_at) > nowMs / 1000 + 300) {
    refuse(KEY_SET_ROOT_PATH, "the root-signed key set is dated in the future");
  }
  return {
    keys: signed.keys.map((key) => ({
      kid: key.kid,
      alg: key.alg,
      public_key: key.public_key,
      status: "active" as const,
      retired_at: null,
    })),
  };
}
