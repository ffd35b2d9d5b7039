/**
 * The feed credential of an API key (docs/feeds.md "Velopack"): Velopack's
 * client sends no header of its own, so its feed URL carries
 * `vk_{keyId}_{mac}`, where `mac` is the first 32 hex digits of
 * HMAC-SHA256 keyed with the SHA-256 hex of the key's secret (the hash the
 * service stores) over `velopack-feed`. It presents that key: its
 * permission, scope, expiry and revocation; it opens nothing but the feeds
 * that take it, and the key's secret cannot be read back from it.
 */
import { createHmac } from "node:crypto";
import { getApiKey, getApiKeyByHash } from "../store/api_keys.ts";
import { type Cached, thenRead } from "../store/cache.ts";
import type { KeyLookup } from "../store/key_lookup.ts";
import type { Store } from "../store/store.ts";
import type { ApiKey } from "../store/types.ts";
import { constantTimeEqual } from "../lib/secrets.ts";

const CREDENTIAL = /^vk_([1-9][0-9]{0,14})_([0-9a-f]{32})$/;
const MAC_INPUT = "velopack-feed";
/** Most credentials remembered with their key's hash; then the memory starts over. */
const MAX_REMEMBERED = 10_000;

/** The feed credential of the key with id `keyId` whose secret's SHA-256 hex is `hash`. */
export function feedCredential(keyId: number, hash: string): string {
  const mac = createHmac("sha256", hash).update(MAC_INPUT).digest("hex").slice(0, 32);
  return `vk_${keyId}_${mac}`;
}

/**
 * Finds the key a feed credential presents (a `KeyLookup` for the feed's
 * surface): the key record by id, the MAC checked against its hash; a
 * credential checked once is remembered with the hash, so the next request
 * reads the key through the read cache like a bearer key.
 */
export function createCredentialLookup(store: Store): KeyLookup {
  const hashes = new Map<string, string>();
  const check = (credential: string, key: ApiKey | null): ApiKey | null => {
    if (key === null || !constantTimeEqual(feedCredential(key.id, key.hash), credential)) {
      hashes.delete(credential);
      return null;
    }
    if (!hashes.has(credential)) {
      if (hashes.size >= MAX_REMEMBERED) hashes.clear();
      hashes.set(credential, key.hash);
    }
    return key;
  };
  return {
    find(credential, beforeRead): Cached<ApiKey | null> {
      const remembered = hashes.get(credential);
      if (remembered !== undefined) {
        return thenRead(getApiKeyByHash(store, remembered), (key) => check(credential, key));
      }
      const match = CREDENTIAL.exec(credential);
      if (match === null) return null;
      return beforeRead().then(() => getApiKey(store, Number(match[1])))
        .then((key) => check(credential, key));
    },
  };
}
