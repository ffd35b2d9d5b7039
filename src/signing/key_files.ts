/**
 * Signing keys' private halves: one PKCS#8 PEM file per key under
 * `<data dir>/signing-keys/`, created 0600 in a 0700 directory
 * (src/lib/private_files.ts). Nothing here logs or returns a private key
 * except as a `KeyObject` for signing.
 */
import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { join } from "node:path";
import { createPrivateFile, makePrivateDir } from "../lib/private_files.ts";

export const SIGNING_KEYS_DIR = "signing-keys";

/** A new key pair: its id and public key for the record, its private key written to `dataDir`. */
export async function createKeyFiles(
  dataDir: string,
): Promise<{ kid: string; publicKey: string }> {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "jwk" }).x as string;
  const kid = kidOf(raw);
  const dir = join(dataDir, SIGNING_KEYS_DIR);
  await makePrivateDir(dir);
  const file = await createPrivateFile(join(dir, `${kid}.pem`));
  try {
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    await file.write(new TextEncoder().encode(pem));
  } finally {
    file.close();
  }
  return { kid, publicKey: raw };
}

/** The key id of a raw public key (base64url): `k` and 16 hex digits of its SHA-256. */
export function kidOf(publicKeyBase64url: string): string {
  const bytes = Uint8Array.from(atob(publicKeyBase64url.replace(/-/g, "+").replace(/_/g, "/")), (
    ch,
  ) => ch.charCodeAt(0));
  return `k${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}`;
}

/** The private key of `kid`, or null when this data dir does not hold it. */
export async function readPrivateKey(dataDir: string, kid: string): Promise<KeyObject | null> {
  if (!/^k[0-9a-f]{16}$/.test(kid)) return null;
  try {
    const pem = await Deno.readTextFile(join(dataDir, SIGNING_KEYS_DIR, `${kid}.pem`));
    return createPrivateKey(pem);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}
