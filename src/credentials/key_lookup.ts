/** Finding the stored key that a bearer token presents, for the client API's key check. */
import { getApiKeyByHash, hashApiKeySecret } from "./api_keys.ts";
import type { ApiKey } from "./types.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import type { Store } from "../kv/store.ts";

export interface KeyLookup {
  /**
   * The stored key `token` presents, or null: at once when the read cache
   * holds it, else a promise of the KV read. `beforeRead` runs before such a
   * read of a token that never presented a stored key here, and may refuse it
   * by throwing (the client API limits guessing per address that way).
   */
  find(token: string, beforeRead: () => Promise<void>): MaybeAsync<ApiKey | null>;
}

/** Most tokens remembered with their hash; then the memory starts over. */
const MAX_REMEMBERED_TOKENS = 10_000;

/**
 * The default lookup: the token's SHA-256, then the store's read cache, then
 * KV. Hashing costs a few µs a request, a map lookup a fraction of one, so
 * the hashes of tokens that presented a stored key are remembered (only
 * those, so guessing cannot fill the map). The key record itself is still
 * read through the cache on every request, so a disabled key is refused at
 * once. A remembered token also skips `beforeRead`: a key that was accepted
 * once does not queue behind a flood of made-up tokens from its address
 * after a write emptied the cache.
 */
export function createKeyLookup(store: Store): KeyLookup {
  const tokenHashes = new Map<string, string>();
  const remember = (token: string, hash: string, key: ApiKey | null): ApiKey | null => {
    if (key === null) {
      tokenHashes.delete(token);
    } else if (!tokenHashes.has(token)) {
      if (tokenHashes.size >= MAX_REMEMBERED_TOKENS) tokenHashes.clear();
      tokenHashes.set(token, hash);
    }
    return key;
  };
  return {
    find(token, beforeRead) {
      const remembered = tokenHashes.get(token);
      if (remembered !== undefined) {
        const found = getApiKeyByHash(store, remembered);
        // The hot path: a cached record, returned as it is.
        if (found !== null && !(found instanceof Promise)) return found;
        return thenRead(found, (key) => remember(token, remembered, key));
      }
      const hash = hashApiKeySecret(token);
      return thenRead(
        getApiKeyByHash(store, hash, beforeRead),
        (key) => remember(token, hash, key),
      );
    },
  };
}
