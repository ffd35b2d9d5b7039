/**
 * Updater signatures for tests, made and checked with node:crypto only:
 * minisign's format (what Tauri's bundler writes, base64 in its `.sig`) and
 * Sparkle's plain Ed25519 `sparkle:edSignature`.
 */
import assert from "node:assert/strict";
import { createHash, createPublicKey, generateKeyPairSync, sign, verify } from "node:crypto";

const ED25519_SPKI = Uint8Array.from([
  0x30,
  0x2a,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x70,
  0x03,
  0x21,
  0x00,
]);

export const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const toBase64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/** minisign's check, independently: Ed25519 over BLAKE2b-512 of the file ("ED" signatures). */
export function minisignVerifies(publicKeyFile: string, signatureFile: string, bytes: Uint8Array) {
  const pk = fromBase64(publicKeyFile.trim().split("\n")[1]);
  const sig = fromBase64(signatureFile.split("\n")[1]);
  assert.equal(new TextDecoder().decode(sig.subarray(0, 2)), "ED", "a prehashed signature");
  assert.deepEqual(sig.subarray(2, 10), pk.subarray(2, 10), "signed with this key");
  const key = createPublicKey({
    key: Buffer.concat([ED25519_SPKI, pk.subarray(10)]),
    format: "der",
    type: "spki",
  });
  const prehash = createHash("blake2b512").update(bytes).digest();
  return verify(null, prehash, key, sig.subarray(10));
}

/** The signatures a vendor's build makes for `bytes`, and the public keys that check them. */
export interface VendorSignatures {
  /** The minisign signature file (what `minisign -S` writes). */
  minisign: string;
  /** Tauri's `.sig`: the base64 of that file, one line. */
  tauriSig: string;
  /** The minisign public key file. */
  minisignPublicKey: string;
  /** Sparkle's EdDSA signature (base64), as `sign_update` prints it in `sparkle:edSignature`. */
  edSignature: string;
  /** Checks a served Sparkle signature over `bytes`. */
  sparkleVerifies(signature: string, bytes: Uint8Array): boolean;
}

/** Signs `bytes` like minisign (prehashed, with a trusted comment) and like Sparkle's sign_update. */
export function vendorSignatures(bytes: Uint8Array, filename: string): VendorSignatures {
  const minisignKey = generateKeyPairSync("ed25519");
  const keyId = crypto.getRandomValues(new Uint8Array(8));
  const raw = fromBase64(
    String(minisignKey.publicKey.export({ format: "jwk" }).x).replaceAll("-", "+")
      .replaceAll("_", "/") + "=",
  );
  const prehash = createHash("blake2b512").update(bytes).digest();
  const signature = sign(null, prehash, minisignKey.privateKey);
  const trusted = `timestamp:1764000000\tfile:${filename}\thashed`;
  const global = sign(
    null,
    Buffer.concat([signature, new TextEncoder().encode(trusted)]),
    minisignKey.privateKey,
  );
  const ed = new TextEncoder().encode("ED");
  const minisign = "untrusted comment: signature from minisign secret key\n" +
    `${toBase64(Buffer.concat([ed, keyId, signature]))}\n` +
    `trusted comment: ${trusted}\n${toBase64(global)}\n`;
  const sparkleKey = generateKeyPairSync("ed25519");
  return {
    minisign,
    tauriSig: btoa(minisign),
    minisignPublicKey: "untrusted comment: minisign public key\n" +
      `${toBase64(Buffer.concat([new TextEncoder().encode("Ed"), keyId, raw]))}\n`,
    edSignature: sign(null, bytes, sparkleKey.privateKey).toString("base64"),
    sparkleVerifies: (served, got) => verify(null, got, sparkleKey.publicKey, fromBase64(served)),
  };
}
