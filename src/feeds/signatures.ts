/**
 * The updater signatures a vendor uploads with a release (the admin form,
 * the publishing API, the reference client's `publish`), checked for their
 * form and stored as the feeds send them. The service never signs: the
 * vendor's build does, with a key the vendor keeps. A signature not in its
 * form is the store's `ValidationError` (a clear error on every surface).
 */

import { ValidationError } from "../kv/errors.ts";

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** A minisign signature file: untrusted comment, signature, trusted comment, global signature. */
const MINISIGN_FILE =
  /^untrusted comment: [^\n]*\n[A-Za-z0-9+/]{99}=\ntrusted comment: [^\n]*\n[A-Za-z0-9+/]{86}==\n?$/;

function decodeBase64(text: string): Uint8Array | null {
  if (!BASE64.test(text) || text.length % 4 !== 0) return null;
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function encodeBase64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

/**
 * The Tauri updater's `signature`: the `.sig` file Tauri's bundler writes (the
 * base64 of a minisign signature file), or the minisign file itself (what
 * `minisign -S` writes), stored as the base64 form. Empty: none.
 */
export function tauriSignature(raw: string | undefined): string | undefined {
  const text = (raw ?? "").replaceAll("\r\n", "\n").trim();
  if (text === "") return undefined;
  const minisign = text.startsWith("untrusted comment:")
    ? text
    : new TextDecoder().decode(decodeBase64(text.replace(/\s+/g, "")) ?? new Uint8Array());
  const file = minisign.endsWith("\n") ? minisign : `${minisign}\n`;
  if (!MINISIGN_FILE.test(file)) {
    throw new ValidationError(
      "tauri_signature",
      "tauri_signature must be the .sig file of the Tauri bundler (or a minisign signature file)",
    );
  }
  return encodeBase64(file);
}

/**
 * Sparkle's `sparkle:edSignature`: the base64 Ed25519 signature, or the line
 * `sign_update` prints (`sparkle:edSignature="…" length="…"`). Empty: none.
 */
export function sparkleSignature(raw: string | undefined): string | undefined {
  const text = (raw ?? "").trim();
  if (text === "") return undefined;
  const value = /sparkle:edSignature="([^"]*)"/.exec(text)?.[1] ?? text;
  if (decodeBase64(value)?.byteLength !== 64) {
    throw new ValidationError(
      "sparkle_signature",
      "sparkle_signature must be the base64 EdDSA signature sign_update prints (64 bytes)",
    );
  }
  return value;
}
