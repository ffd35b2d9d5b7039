/**
 * What the offline signing tools (tools/sign_key_set.ts, tools/tuf_root.ts)
 * read: an Ed25519 private key file, and a published key set from a file or
 * the service's URL.
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import type { SigningKey } from "../src/signing/signing_keys.ts";
import { callerPath } from "./caller_paths.ts";

/** A key as the published key set lists it. */
export type PublishedKey = Pick<SigningKey, "kid" | "alg" | "public_key" | "status">;

/** The Ed25519 private key of a PKCS#8 PEM file (tools/caller_paths.ts); throws for any other key. */
export async function readEd25519Key(path: string): Promise<KeyObject> {
  const key = createPrivateKey(await Deno.readTextFile(callerPath(path)));
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`${path} is not an Ed25519 key`);
  return key;
}

/** The keys of the key set at `source`, a file path (tools/caller_paths.ts) or an http(s) URL. */
export async function readKeySet(
  source: string,
): Promise<PublishedKey[]> {
  const text = /^https?:\/\//.test(source)
    ? await (async () => {
      const res = await fetch(source);
      if (!res.ok) throw new Error(`${source} answered ${res.status}`);
      return await res.text();
    })()
    : await Deno.readTextFile(callerPath(source));
  const set = JSON.parse(text);
  if (!Array.isArray(set?.keys)) throw new Error(`${source} is not a key set (no "keys")`);
  return set.keys;
}
