/**
 * The offline root (docs/signing.md "Offline root"): a document in which a
 * root key that never touches the server vouches for the signing keys. The
 * operator signs it off the server (tools/sign_key_set.ts) and uploads it on
 * the Signing keys page; the service only stores and serves it, so nothing
 * here needs a private key except `signRootDocument`, which the tool calls.
 *
 * The document is `{"payload": <base64url of the payload's JSON>,
 * "signatures": [{"kid", "sig"}]}`; each root key signs the UTF-8 text
 * `uds-root-v1\n<payload as in the document>`, so no JSON canonicalization
 * is needed. The payload is `{"type": "uds-key-set-root", "signed_at",
 * "expires" (Unix seconds), "keys": [{"kid", "alg", "public_key"}]}`.
 */
import { Buffer } from "node:buffer";
import { type KeyObject, sign } from "node:crypto";
import type { SigningKey } from "./signing_keys.ts";

export const ROOT_PAYLOAD_TYPE = "uds-key-set-root";

export interface RootKeyEntry {
  kid: string;
  alg: "Ed25519";
  public_key: string;
}

export interface RootPayload {
  type: typeof ROOT_PAYLOAD_TYPE;
  signed_at: number;
  expires: number;
  keys: RootKeyEntry[];
}

export interface RootDocument {
  payload: string;
  signatures: Array<{ kid: string; sig: string }>;
}

const encoder = new TextEncoder();
const KID = /^k[0-9a-f]{16}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The text each root key signs. */
export function rootMessage(payload: string): string {
  return `uds-root-v1\n${payload}`;
}

/**
 * Signs the keys of a key set (all but the retired ones) with `rootKey`,
 * valid for `days` from `nowMs`.
 */
export function signRootDocument(options: {
  keys: ReadonlyArray<Pick<SigningKey, "kid" | "alg" | "public_key" | "status">>;
  rootKey: KeyObject;
  rootKid: string;
  days: number;
  nowMs?: number;
}): RootDocument {
  const signedAt = Math.floor((options.nowMs ?? Date.now()) / 1000);
  const payload: RootPayload = {
    type: ROOT_PAYLOAD_TYPE,
    signed_at: signedAt,
    expires: signedAt + Math.round(options.days * 86_400),
    keys: options.keys.filter((key) => key.status !== "retired").map((key) => ({
      kid: key.kid,
      alg: key.alg,
      public_key: key.public_key,
    })),
  };
  const text = Buffer.from(JSON.stringify(payload)).toString("base64url");
  const sig = sign(null, encoder.encode(rootMessage(text)), options.rootKey).toString("base64url");
  return { payload: text, signatures: [{ kid: options.rootKid, sig }] };
}

/**
 * The document and payload of an uploaded text, or a message saying what is
 * wrong with it. The service cannot check the signature (it does not know the
 * root), only the shape; clients check the signature.
 */
export function parseRootDocument(
  text: string,
): { document: RootDocument; payload: RootPayload } | { error: string } {
  let document: RootDocument;
  try {
    document = JSON.parse(text);
  } catch {
    return { error: "it is not JSON" };
  }
  if (
    typeof document !== "object" || document === null || typeof document.payload !== "string" ||
    !BASE64URL.test(document.payload) || !Array.isArray(document.signatures) ||
    document.signatures.length === 0 ||
    !document.signatures.every((s) =>
      typeof s?.kid === "string" && KID.test(s.kid) && typeof s.sig === "string" &&
      BASE64URL.test(s.sig)
    )
  ) {
    return { error: 'it needs a "payload" and at least one signature {"kid", "sig"}' };
  }
  let payload: RootPayload;
  try {
    payload = JSON.parse(Buffer.from(document.payload, "base64url").toString("utf8"));
  } catch {
    return { error: "its payload is not base64url JSON" };
  }
  if (
    payload?.type !== ROOT_PAYLOAD_TYPE || !Number.isSafeInteger(payload.signed_at) ||
    !Number.isSafeInteger(payload.expires) || !Array.isArray(payload.keys) ||
    !payload.keys.every((k) =>
      typeof k?.kid === "string" && KID.test(k.kid) && k.alg === "Ed25519" &&
      typeof k.public_key === "string" && BASE64URL.test(k.public_key)
    )
  ) {
    return { error: `its payload is not a "${ROOT_PAYLOAD_TYPE}" with signed_at, expires, keys` };
  }
  return {
    document: {
      payload: document.payload,
      signatures: document.signatures.map(({ kid, sig }) => ({ kid, sig })),
    },
    payload,
  };
}

/** What a stored root document says, for the admin page; null when there is none. */
export function describeRootDocument(
  document: RootDocument | null,
): { roots: string[]; signedAt: string; expires: string; kids: string[] } | null {
  if (document === null) return null;
  const parsed = parseRootDocument(JSON.stringify(document));
  if ("error" in parsed) return null;
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
  return {
    roots: parsed.document.signatures.map((s) => s.kid),
    signedAt: iso(parsed.payload.signed_at),
    expires: iso(parsed.payload.expires),
    kids: parsed.payload.keys.map((k) => k.kid),
  };
}
