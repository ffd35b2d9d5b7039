/**
 * The Sparkle appcast keys (docs/feeds.md "Signed Sparkle feeds"): per
 * project, the public half of the EdDSA key the vendor gave, and the bundle
 * identifier the appcast names. The private key is never in KV: it is a 0600
 * file in the data dir (src/feeds/sparkle_signing.ts).
 */
import { now, retryWhileLocked } from "../kv/atomic.ts";
import { sparkleFeedKeyKey, sparkleFeedKeysPrefix } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export interface SparkleFeedKey {
  project_id: number;
  /** The Ed25519 public key, base64 (as in the app's SUPublicEDKey). */
  public_key: string;
  /** CFBundleIdentifier of the app, for `sparkle:bundleIdentifier`; empty for none. */
  bundle_identifier: string;
  set_at: string;
  set_by: string;
}

export async function setSparkleFeedKey(
  store: Store,
  input: Omit<SparkleFeedKey, "set_at">,
): Promise<SparkleFeedKey> {
  const record: SparkleFeedKey = { ...input, set_at: now() };
  await retryWhileLocked(() => store.kv.set(sparkleFeedKeyKey(record.project_id), record));
  return record;
}

export async function getSparkleFeedKeyByProject(
  store: Store,
  projectId: number,
): Promise<SparkleFeedKey | null> {
  return (await store.kv.get<SparkleFeedKey>(sparkleFeedKeyKey(projectId))).value;
}

export async function deleteSparkleFeedKey(store: Store, projectId: number): Promise<void> {
  await retryWhileLocked(() => store.kv.delete(sparkleFeedKeyKey(projectId)));
}

/** Every project's appcast key, by project id. */
export async function listSparkleFeedKeys(store: Store): Promise<SparkleFeedKey[]> {
  const keys: SparkleFeedKey[] = [];
  for await (const entry of store.kv.list<SparkleFeedKey>({ prefix: sparkleFeedKeysPrefix() })) {
    keys.push(entry.value);
  }
  return keys;
}
