/**
 * The credential a feed URL carries for updaters that send no headers of
 * their own (Squirrel.Windows, Velopack; docs/feeds.md "A credential in the
 * URL"): `/feeds/c/{credential}/…` stands for `Authorization: Bearer <key>`.
 *
 * A credential is `vk_{keyId}_{mac}`, `mac` the first 32 hex digits of
 * HMAC-SHA256 over `velopack-feed` keyed with the key's secret itself, so a
 * key has one credential for every feed that takes one and a vendor can make
 * it where the key is made. The service never holds the secret: the key
 * record keeps the SHA-256 of `mac` (`feed_mac_sha256`), written when the key
 * is made or, for a key made without one, when the key asks for its
 * credential (`GET /feeds/url-credential`). KV and its backups therefore hold
 * nothing a credential can be made from. It stands for its key alone: the
 * key's permission, scope, expiry and rate-limit bucket; disabling, expiring
 * or deleting the key refuses it at once. The access log writes the segment
 * as `[redacted]` (src/lib/url_credential_path.ts).
 */
import { feedMac } from "../lib/feed_mac.ts";
import { constantTimeEqual, sha256Hex } from "../lib/secrets.ts";
import { getApiKey, getApiKeyByHash } from "../credentials/api_keys.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import type { KeyLookup } from "../credentials/key_lookup.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Store } from "../kv/store.ts";

const CREDENTIAL = /^vk_([1-9][0-9]{0,14})_([0-9a-f]{32})$/;
/** The credential of the key with id `keyId` and secret `secret`. */
export function feedCredential(keyId: number, secret: string): string {
  return `vk_${keyId}_${feedMac(secret)}`;
}

/** The id of the key `text` names, or null when it is no credential at all. */
export function urlCredentialKeyId(text: string): number | null {
  const match = CREDENTIAL.exec(text);
  return match === null ? null : Number(match[1]);
}

/** Whether `credential` is the one of `key` (false for a key that keeps no MAC hash). */
function credentialOfKey(credential: string, key: ApiKey): boolean {
  const match = CREDENTIAL.exec(credential);
  if (match === null || Number(match[1]) !== key.id) return false;
  const stored = key.feed_mac_sha256;
  return stored !== undefined && constantTimeEqual(sha256Hex(match[2]), stored);
}

/** Most credentials remembered with their key's hash; then the memory starts over. */
const MAX_REMEMBERED = 10_000;

/**
 * Finds the key a credential stands for (a `KeyLookup` like the bearer
 * token's): the key record by id, the MAC's hash checked against the one it
 * keeps. A credential checked once is remembered with the key's hash, so the
 * next request reads the key through the read cache like a bearer key (and a
 * disabled key is refused at once); `beforeRead` runs before a KV read of one
 * not remembered.
 */
export function createUrlCredentialLookup(store: Store): KeyLookup {
  const hashes = new Map<string, string>();
  const check = (credential: string, key: ApiKey | null): ApiKey | null => {
    if (key === null || !credentialOfKey(credential, key)) {
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
