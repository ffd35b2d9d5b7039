/**
 * What client API keys (api_keys.ts) and publish tokens (publish_tokens.ts)
 * share: a secret shown once behind a fixed prefix, stored only as its
 * SHA-256, an enabled state, an optional expiry, and the time of last use
 * kept in an entry of its own.
 */
import { randomToken, sha256Hex } from "../lib/secrets.ts";
import { getManyEntries } from "../kv/get_many.ts";
import type { Credential } from "./types.ts";
import { parseExpiresAt } from "../projects/validate.ts";
import type { Store } from "../kv/store.ts";

/** How many characters of the secret after its fixed prefix are shown. */
const SHOWN_SECRET_CHARACTERS = 6;

/** SHA-256 hex of a credential's secret (the hash stored and looked up, never the secret). */
export function hashCredentialSecret(secret: string): string {
  return sha256Hex(secret);
}

/**
 * A new secret behind `secretPrefix` and the credential fields it gives an
 * enabled record (`expiresAt` as given to `parseExpiresAt`).
 */
export function newCredential(
  secretPrefix: string,
  name: string,
  expiresAt: string | null | undefined,
): {
  secret: string;
  fields: Pick<Credential, "name" | "hash" | "prefix" | "active" | "expires_at">;
} {
  const secret = secretPrefix + randomToken();
  return {
    secret,
    fields: {
      name,
      hash: hashCredentialSecret(secret),
      prefix: secret.slice(0, secretPrefix.length + SHOWN_SECRET_CHARACTERS),
      active: true,
      expires_at: parseExpiresAt(expiresAt),
    },
  };
}

/** Every credential under `prefix`, in id order, with its `last_used_at` (`withLastUsed`). */
export async function listCredentials<T extends Credential>(
  store: Store,
  prefix: Deno.KvKey,
  lastUsedKey: (id: number) => Deno.KvKey,
): Promise<T[]> {
  const credentials: T[] = [];
  for await (const entry of store.kv.list<T>({ prefix })) credentials.push(entry.value);
  return await withLastUsed(store, credentials, lastUsedKey);
}

/** Fills in each credential's `last_used_at` from its own entry (`lastUsedKey`). */
export async function withLastUsed<T extends Credential>(
  store: Store,
  credentials: T[],
  lastUsedKey: (id: number) => Deno.KvKey,
): Promise<T[]> {
  const used = await getManyEntries<string>(
    store.kv,
    credentials.map((credential) => lastUsedKey(credential.id)),
  );
  credentials.forEach((credential, i) => credential.last_used_at = used[i].value);
  return credentials;
}
