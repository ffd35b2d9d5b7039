/**
 * The credential a feed URL carries for updaters that send no headers of
 * their own (Squirrel.Windows, Velopack; docs/feeds.md "A credential in the
 * URL"): `/feeds/c/{credential}/…` stands for `Authorization: Bearer <key>`.
 *
 * A credential is `uf{keyId}.{mac}`, the MAC an HMAC-SHA256 keyed by the
 * stored hash of the key's secret. So it is derived from one key and stands
 * for that key alone: its permission, scope, expiry and rate-limit bucket;
 * disabling, expiring or deleting the key refuses it at once, and it cannot
 * be turned back into the key (the client API still wants the key itself).
 * The access log writes it as `[redacted]` (src/lib/url_credential_path.ts).
 */
import { createHmac } from "node:crypto";
import { constantTimeEqual } from "../lib/secrets.ts";
import { getApiKey } from "../store/api_keys.ts";
import type { ApiKey } from "../store/types.ts";
import type { Store } from "../store/store.ts";

const CREDENTIAL = /^uf([1-9][0-9]{0,14})\.([A-Za-z0-9_-]{43})$/;
const LABEL = "uds feed url credential v1";

/** The credential of `key`: the same text for the key's whole life. */
export function urlCredentialOf(key: Pick<ApiKey, "id" | "hash">): string {
  const mac = createHmac("sha256", key.hash).update(`${LABEL}:${key.id}`).digest("base64url");
  return `uf${key.id}.${mac}`;
}

/** The id of the key `text` names, or null when it is no credential at all. */
export function urlCredentialKeyId(text: string): number | null {
  const match = CREDENTIAL.exec(text);
  return match === null ? null : Number(match[1]);
}

/**
 * The stored key `text` stands for, or null (no credential, no such key, or a
 * MAC that does not match the key): one KV read of the key record.
 */
export async function findKeyByUrlCredential(store: Store, text: string): Promise<ApiKey | null> {
  const id = urlCredentialKeyId(text);
  if (id === null) return null;
  const key = await getApiKey(store, id);
  return key !== null && constantTimeEqual(urlCredentialOf(key), text) ? key : null;
}
