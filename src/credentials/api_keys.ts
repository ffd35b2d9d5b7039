import { NAME_MAX_LENGTH, SCOPE_PROJECTS_MAX_COUNT } from "../lib/limits.ts";
import { feedMacHash } from "../lib/feed_mac.ts";
import { randomToken } from "../lib/secrets.ts";
import { apiKeyAggregates } from "../projects/aggregates.ts";
import { now, takeIds } from "../kv/atomic.ts";
import { cachedRead, changeOp, commitChange, type MaybeAsync } from "../kv/cache.ts";
import {
  hashCredentialSecret,
  listCredentials,
  newCredential,
  withLastUsed,
} from "./credential_records.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import { type CursorPage, cursorPage, type PageRequest } from "../kv/paging.ts";
import { apiKeyByHashKey, apiKeyKey, apiKeyLastUsedKey, apiKeysPrefix } from "../kv/keys.ts";
import { type ApiKey, SCOPE_MODES, type ScopeMode } from "./types.ts";
import { parseExpiresAt, requireTags, requireText } from "../projects/validate.ts";
import { addWebhookEvent } from "../webhooks/outbox.ts";
import type { Store } from "../kv/store.ts";

/**
 * Keys look like `uds_<43 base64url chars>`: a random token (`TOKEN_BYTES`,
 * 256 bits) behind a fixed prefix that secret scanners can match
 * (`uds_[A-Za-z0-9_-]{43}`, 43 being `TOKEN_LENGTH`).
 */
export const API_KEY_PREFIX = "uds_";

export function generateApiKeySecret(): string {
  return API_KEY_PREFIX + randomToken();
}

/** SHA-256 hex of a key's secret (the hash stored and looked up, never the secret). */
export function hashApiKeySecret(secret: string): string {
  return hashCredentialSecret(secret);
}

/** A key's fields as given, for a new key and an edit alike (`editApiKey`, edits.ts). */
export interface ApiKeyInput {
  name: string;
  can_download: boolean;
  scope_mode: string;
  project_ids?: readonly number[];
  tags?: readonly string[];
  /**
   * Rollout tags, whatever the mode (`ApiKey.rollout_tags`); not given: none
   * for a new key, the stored ones stay on an edit.
   */
  rollout_tags?: readonly string[];
  /**
   * RFC 3339 time, or an HTML datetime-local value read as UTC; null or empty
   * for no expiry (see `parseExpiresAt`).
   */
  expires_at?: string | null;
}

export function requireScopeMode(mode: string): ScopeMode {
  if (!(SCOPE_MODES as readonly string[]).includes(mode)) {
    throw new ValidationError("scope_mode", `scope_mode must be one of ${SCOPE_MODES.join(", ")}`);
  }
  return mode as ScopeMode;
}

/**
 * Checks a key's input and makes its secret: the secret, and the record
 * without the id and creation time that its commit gives it.
 */
export function prepareApiKey(
  input: ApiKeyInput,
): { secret: string; record: Omit<ApiKey, "id" | "created_at"> } {
  const { name, scopeMode, tags, rolloutTags, projectIds, expiresAt } = validateKeyFields(input);
  const { secret, fields } = newCredential(API_KEY_PREFIX, name, expiresAt);
  return {
    secret,
    record: {
      ...fields,
      feed_mac_sha256: feedMacHash(secret),
      can_download: input.can_download,
      scope_mode: scopeMode,
      project_ids: projectIds,
      tags,
      rollout_tags: rolloutTags ?? [],
    },
  };
}

/**
 * A key's name, scope, rollout tags and expiry as given, checked (new keys and
 * edits alike); `rolloutTags` is undefined when none were given.
 */
export function validateKeyFields(
  input: Pick<
    ApiKeyInput,
    "name" | "scope_mode" | "tags" | "rollout_tags" | "project_ids" | "expires_at"
  >,
) {
  const name = requireText("name", input.name, { min: 1, max: NAME_MAX_LENGTH });
  const scopeMode = requireScopeMode(input.scope_mode);
  const tags = requireTags("tags", input.tags ?? []);
  const rolloutTags = input.rollout_tags === undefined
    ? undefined
    : requireTags("rollout_tags", input.rollout_tags);
  const projectIds = [...new Set(input.project_ids ?? [])];
  if (projectIds.length > SCOPE_PROJECTS_MAX_COUNT) {
    throw new ValidationError(
      "project_ids",
      `a key's scope can name at most ${SCOPE_PROJECTS_MAX_COUNT} projects`,
    );
  }
  return {
    name,
    scopeMode,
    tags,
    rolloutTags,
    projectIds,
    expiresAt: parseExpiresAt(input.expires_at),
  };
}

/** Creates a key; the secret is returned here once and never stored. */
export async function createApiKey(
  store: Store,
  input: ApiKeyInput,
): Promise<{ apiKey: ApiKey; secret: string }> {
  const { secret, record } = prepareApiKey(input);
  const id = await takeIds(store, "api_keys");
  return await commitChange(store, async () => {
    const apiKey: ApiKey = { id, ...record, created_at: now() };
    // A new key was never cached (unknown hashes are not), so nothing is forgotten.
    const changed = [] as const;
    const op = changeOp(store, changed)
      .check({ key: apiKeyByHashKey(apiKey.hash), versionstamp: null })
      .set(apiKeyKey(apiKey.id), apiKey)
      .set(apiKeyByHashKey(apiKey.hash), apiKey.id);
    addApiKeyEvents(op, null, apiKey);
    const commit = await apiKeyAggregates(op, null, apiKey).commit();
    return { commit, value: { apiKey, secret }, changed };
  });
}

export async function getApiKey(store: Store, id: number): Promise<ApiKey | null> {
  return (await store.kv.get<ApiKey>(apiKeyKey(id))).value;
}

/**
 * Looks a presented key up by the hash of its secret (cached; see cache.ts).
 * `beforeRead`, when given, runs before a KV read (never on a cache hit) and
 * may refuse it by throwing (the rate limit of unknown tokens).
 */
export function getApiKeyByHash(
  store: Store,
  hash: string,
  beforeRead?: () => Promise<void>,
): MaybeAsync<ApiKey | null> {
  return cachedRead(store, {
    name: "api_key_by_hash",
    id: hash,
    load: async () => {
      await beforeRead?.();
      const id = (await store.kv.get<number>(apiKeyByHashKey(hash))).value;
      return id === null ? null : await getApiKey(store, id);
    },
  });
}

/** Every key with its `last_used_at`, in id order. */
export function listApiKeys(store: Store): Promise<ApiKey[]> {
  return listCredentials<ApiKey>(store, apiKeysPrefix(), apiKeyLastUsedKey);
}

/** One page of keys, newest first, with their `last_used_at` (see paging.ts). */
export async function listApiKeysPage(
  store: Store,
  { match, ...request }: PageRequest<ApiKey>,
): Promise<CursorPage<ApiKey>> {
  const page = await cursorPage<ApiKey, ApiKey>(store.kv, {
    ...request,
    parts: ["number"],
    prefix: apiKeysPrefix(),
    reverse: true,
    load: (entries) =>
      Promise.resolve(
        entries.map(({ value }) => match?.(value) ?? true ? { ...value } : null),
      ),
  });
  await withLastUsed(store, page.rows, apiKeyLastUsedKey);
  return page;
}

export async function setApiKeyActive(store: Store, id: number, active: boolean): Promise<ApiKey> {
  return await commitChange(store, async () => {
    const entry = await store.kv.get<ApiKey>(apiKeyKey(id));
    if (entry.value === null) throw new NotFoundError("api key not found");
    const apiKey = { ...entry.value, active };
    const changed = [["api_key_by_hash", apiKey.hash]] as const;
    const op = changeOp(store, changed).check(entry).set(apiKeyKey(id), apiKey);
    addApiKeyEvents(op, entry.value, apiKey);
    const commit = await apiKeyAggregates(op, entry.value, apiKey).commit();
    return { commit, value: apiKey, changed };
  });
}

/**
 * Keeps the hash of key `id`'s feed URL credential MAC (`ApiKey.feed_mac_sha256`)
 * when the record has none yet; the key as stored after.
 */
export async function keepApiKeyFeedMac(
  store: Store,
  id: number,
  macHash: string,
): Promise<ApiKey> {
  return await commitChange(store, async () => {
    const entry = await store.kv.get<ApiKey>(apiKeyKey(id));
    if (entry.value === null) throw new NotFoundError("api key not found");
    const changed = [["api_key_by_hash", entry.value.hash]] as const;
    const stored = entry.value.feed_mac_sha256;
    const apiKey: ApiKey = { ...entry.value, feed_mac_sha256: stored ?? macHash };
    if (stored !== undefined) {
      const commit = { ok: true as const, versionstamp: entry.versionstamp };
      return { commit, value: apiKey, changed };
    }
    const commit = await changeOp(store, changed).check(entry).set(apiKeyKey(id), apiKey).commit();
    return { commit, value: apiKey, changed };
  });
}

/**
 * Records when a key was last used. Kept in its own entry so that this
 * bookkeeping write never conflicts with an admin's change of the key.
 */
export async function recordApiKeyUse(store: Store, id: number, at: string): Promise<void> {
  await store.kv.set(apiKeyLastUsedKey(id), at);
}

/** The events of an API key write, added to its commit: `key.created`, `key.disabled`. */
function addApiKeyEvents(
  op: Deno.AtomicOperation,
  before: ApiKey | null,
  after: ApiKey,
): Deno.AtomicOperation {
  const data = { key: { id: after.id, name: after.name, expires_at: after.expires_at } };
  if (before === null) addWebhookEvent(op, "key.created", data);
  else if (before.active && !after.active) addWebhookEvent(op, "key.disabled", data);
  return op;
}
