/**
 * The credential a feed URL carries for updaters that send no headers of
 * their own (Squirrel.Windows, Velopack; docs/feeds.md "A credential in the
 * URL"): `/feeds/c/{credential}/…` stands for `Authorization: Bearer <key>`.
 *
 * A credential is `vk_{keyId}_{mac}`, `mac` the first 32 hex digits of
 * HMAC-SHA256 over `velopack-feed` keyed with the stored hash of the key's
 * secret (the SHA-256 hex), the form the Velopack feed's credential takes, so
 * a key has one credential for every feed that takes one and a vendor can
 * make it where the key is made. It is derived from one key and stands for
 * that key alone: its permission, scope, expiry and rate-limit bucket;
 * disabling, expiring or deleting the key refuses it at once, and it cannot
 * be turned back into the key (the client API still wants the key itself).
 * The access log writes it as `[redacted]` (src/lib/url_credential_path.ts).
 */
import { createHmac } from "node:crypto";
import { constantTimeEqual } from "../lib/secrets.ts";
import { getApiKey, getApiKeyByHash } from "../store/api_keys.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import type { KeyLookup } from "../credentials/key_lookup.ts";
import type { ApiKey } from "../store/types.ts";
import type { Store } from "../kv/store.ts";

const CREDENTIAL = /^vk_([1-9][0-9]{0,14})_([0-9a-f]{32})$/;
const MAC_INPUT = "velopack-feed";

/** The credential of the key with id `keyId` whose secret's SHA-256 hex is `hash`. */
export function feedCredential(keyId: number, hash: string): string {
  const mac = createHmac("sha256", hash).update(MAC_INPUT).digest("hex").slice(0, 32);
  return `vk_${keyId}_${mac}`;
}

/** The credential of `key`: the same text for the key's whole life. */
export function urlCredentialOf(key: Pick<ApiKey, "id" | "hash">): string {
  return feedCredential(key.id, key.hash);
}

/** The id of the key `text` names, or null when it is no credential at all. */
export function urlCredentialKeyId(text: string): number | null {
  const match = CREDENTIAL.exec(text);
  return match === null ? null : Number(match[1]);
}

/** Most credentials remembered with their key's hash; then the memory starts over. */
const MAX_REMEMBERED = 10_000;

/**
 * Finds the key a credential stands for (a `KeyLookup` like the bearer
 * token's): the key record by id, the MAC checked against its hash. A
 * credential checked once is remembered with the hash, so the next request
 * reads the key through the read cache like a bearer key (and a disabled key
 * is refused at once); `beforeRead` runs before a KV read of one not
 * remembered.
 */
export function createUrlCredentialLookup(store: Store): KeyLookup {
  const hashes = new Map<string, string>();
  const check = (credential: string, key: ApiKey | null): ApiKey | null => {
    if (key === null || !constantTimeEqual(urlCredentialOf(key), credential)) {
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
    find(credential, beforeRead): MaybeAsync<ApiKey | null> {
      const remembered = hashes.get(credential);
      if (remembered !== undefined) {
        return thenRead(getApiKeyByHash(store, remembered), (key) => check(credential, key));
      }
      const id = urlCredentialKeyId(credential);
      if (id === null) return null;
      return beforeRead().then(() => getApiKey(store, id)).then((key) => check(credential, key));
    },
  };
}
