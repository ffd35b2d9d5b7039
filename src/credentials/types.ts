/**
 * Client API keys and publish tokens as stored in Deno KV (src/credentials/api_keys.ts,
 * src/credentials/publish_tokens.ts). Field names follow the client API where they overlap.
 */

export const SCOPE_MODES = [
  "all_projects",
  "project_allow_list",
  "project_deny_list",
  "tag_allow_list",
  "tag_deny_list",
] as const;

export type ScopeMode = typeof SCOPE_MODES[number];

/**
 * The fields client API keys and publish tokens share (their helpers:
 * src/credentials/credential_records.ts).
 */
export interface Credential {
  id: number;
  name: string;
  /** SHA-256 (hex) of the full secret; the secret itself is never stored. */
  hash: string;
  /** The first characters of the secret, safe to show so admins can tell credentials apart. */
  prefix: string;
  active: boolean;
  expires_at: string | null;
  created_at: string;
  /** Filled in from its own KV entry when listing; not part of the stored record. */
  last_used_at?: string | null;
}

export interface ApiKey extends Credential {
  can_download: boolean;
  scope_mode: ScopeMode;
  project_ids: number[];
  /** The scope's tags (tag modes only, ../shared/spec/admin-contract.md "Scope modes"). */
  tags: string[];
  /**
   * Rollout tags, whatever the scope mode: a key carrying a rollout's tester
   * tag gets its release first (docs/rollouts.md "Who gets the release").
   * Records written without it are read through `keyRolloutTags` (access.ts).
   */
  rollout_tags?: string[];
  /**
   * SHA-256 hex of the MAC of the key's feed URL credential
   * (src/lib/feed_mac.ts); absent on a key that has not asked for it since
   * it was made without one.
   */
  feed_mac_sha256?: string;
}
