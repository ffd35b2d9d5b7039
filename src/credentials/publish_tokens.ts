/**
 * Publish tokens: the bearer tokens of release pipelines on the publishing
 * API (docs/publishing.md). Like client API keys they are stored only as the
 * SHA-256 of the secret; unlike them they are never cached (a pipeline's
 * requests are few, and a disabled or deleted token must be refused by every
 * instance at once).
 */
import { NAME_MAX_LENGTH, SCOPE_PROJECTS_MAX_COUNT } from "../lib/limits.ts";
import { commitWithRetry, now, takeIds } from "../kv/atomic.ts";
import { hashCredentialSecret, listCredentials, newCredential } from "./credential_records.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import {
  publishTokenByHashKey,
  publishTokenKey,
  publishTokenLastUsedKey,
  publishTokensPrefix,
} from "../kv/keys.ts";
import type { Credential } from "./types.ts";
import { requireText } from "../projects/validate.ts";
import type { Store } from "../kv/store.ts";

/**
 * Publish tokens look like `udp_<43 base64url chars>`; client API keys start
 * `uds_`, so neither can be mistaken for the other (and secret scanners can
 * match `udp_[A-Za-z0-9_-]{43}`).
 */
export const PUBLISH_TOKEN_PREFIX = "udp_";

/** What a token may do, besides reading the releases of its projects. */
export const PUBLISH_PERMISSIONS = ["upload", "release_state"] as const;
export type PublishPermission = typeof PUBLISH_PERMISSIONS[number];

export interface PublishToken extends Credential {
  /** True: every project; false: only `project_ids`. */
  all_projects: boolean;
  project_ids: number[];
  permissions: PublishPermission[];
  /** The admin who created it. */
  created_by: string;
}

export interface PublishTokenInput {
  name: string;
  all_projects: boolean;
  project_ids?: readonly number[];
  permissions: readonly string[];
  /** RFC 3339 time, or an HTML datetime-local value read as UTC; empty for none. */
  expires_at?: string | null;
  created_by: string;
}

/** Checks a token's input and makes its secret (returned once, never stored). */
export function preparePublishToken(
  input: PublishTokenInput,
): { secret: string; record: Omit<PublishToken, "id" | "created_at"> } {
  const name = requireText("name", input.name, { min: 1, max: NAME_MAX_LENGTH });
  const permissions = [...new Set(input.permissions)];
  for (const permission of permissions) {
    if (!(PUBLISH_PERMISSIONS as readonly string[]).includes(permission)) {
      throw new ValidationError(
        "permissions",
        `permissions must be among ${PUBLISH_PERMISSIONS.join(", ")}`,
      );
    }
  }
  if (permissions.length === 0) {
    throw new ValidationError("permissions", "choose at least one permission");
  }
  const projectIds = input.all_projects ? [] : [...new Set(input.project_ids ?? [])];
  if (!input.all_projects && projectIds.length === 0) {
    throw new ValidationError(
      "project_slugs",
      "name at least one project, or let the token publish to all projects",
    );
  }
  if (projectIds.length > SCOPE_PROJECTS_MAX_COUNT) {
    throw new ValidationError(
      "project_slugs",
      `a token can name at most ${SCOPE_PROJECTS_MAX_COUNT} projects`,
    );
  }
  const { secret, fields } = newCredential(PUBLISH_TOKEN_PREFIX, name, input.expires_at);
  return {
    secret,
    record: {
      ...fields,
      all_projects: input.all_projects,
      project_ids: projectIds,
      permissions: permissions as PublishPermission[],
      created_by: input.created_by,
    },
  };
}

/** Creates a token; the secret is returned here once and never stored. */
export async function createPublishToken(
  store: Store,
  input: PublishTokenInput,
): Promise<{ token: PublishToken; secret: string }> {
  const { secret, record } = preparePublishToken(input);
  const id = await takeIds(store, "publish_tokens");
  const token: PublishToken = { id, ...record, created_at: now() };
  return await commitWithRetry(async () => {
    const commit = await store.kv.atomic()
      .check({ key: publishTokenByHashKey(token.hash), versionstamp: null })
      .set(publishTokenKey(id), token)
      .set(publishTokenByHashKey(token.hash), id)
      .commit();
    return { commit, value: { token, secret } };
  });
}

export async function getPublishToken(store: Store, id: number): Promise<PublishToken | null> {
  return (await store.kv.get<PublishToken>(publishTokenKey(id))).value;
}

/** The token a presented secret belongs to, or null (never cached; see the file comment). */
export async function getPublishTokenBySecret(
  store: Store,
  secret: string,
): Promise<PublishToken | null> {
  const id =
    (await store.kv.get<number>(publishTokenByHashKey(hashCredentialSecret(secret)))).value;
  return id === null ? null : await getPublishToken(store, id);
}

/** Every token with its `last_used_at`, in id order. */
export function listPublishTokens(store: Store): Promise<PublishToken[]> {
  return listCredentials<PublishToken>(store, publishTokensPrefix(), publishTokenLastUsedKey);
}

export async function setPublishTokenActive(
  store: Store,
  id: number,
  active: boolean,
): Promise<PublishToken> {
  return await commitWithRetry(async () => {
    const entry = await store.kv.get<PublishToken>(publishTokenKey(id));
    if (entry.value === null) throw new NotFoundError("publish token not found");
    const token = { ...entry.value, active };
    const commit = await store.kv.atomic().check(entry).set(publishTokenKey(id), token).commit();
    return { commit, value: token };
  });
}

/** Deletes a token and its hash index; the token is refused from the next request on. */
export async function deletePublishToken(store: Store, id: number): Promise<PublishToken> {
  return await commitWithRetry(async () => {
    const entry = await store.kv.get<PublishToken>(publishTokenKey(id));
    if (entry.value === null) throw new NotFoundError("publish token not found");
    const commit = await store.kv.atomic()
      .check(entry)
      .delete(publishTokenKey(id))
      .delete(publishTokenByHashKey(entry.value.hash))
      .delete(publishTokenLastUsedKey(id))
      .commit();
    return { commit, value: entry.value };
  });
}

/** Records when a token was last used (its own entry: never conflicts with an admin's change). */
export async function recordPublishTokenUse(store: Store, id: number, at: string): Promise<void> {
  await store.kv.set(publishTokenLastUsedKey(id), at);
}
