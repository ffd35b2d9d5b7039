/**
 * Records as stored in Deno KV that every floor above reads: projects,
 * releases and API keys. They sit at the lowest floor that reads them: the
 * aggregates beside them, the webhooks' outbox (src/webhooks/outbox.ts) and
 * the records of a release's files (src/artifact_records/block_maps.ts and its kin) read
 * releases and keys below the releases' and credentials' folders. Field names
 * follow the client API where they overlap.
 */

export type ProjectState = "active" | "archived";
/** A `draft` is stored and listed in the admin UI but invisible to clients until published. */
export type ReleaseState = "active" | "archived" | "draft";

export interface Project {
  id: number;
  name: string;
  slug: string;
  description: string;
  tags: string[];
  state: ProjectState;
  created_at: string;
  updated_at: string;
}

export interface Release {
  id: number;
  project_id: number;
  version: string;
  build: string;
  filename: string;
  checksum_sha256: string;
  size_bytes: number;
  content_type: string;
  release_notes: string;
  created_at: string;
  state: ReleaseState;
  /** File name of the artifact under `$APP_DATA_DIR/artifacts/`. */
  storage_key: string;
  /**
   * SHA-512 of the artifact, base64 (the updater feeds' checksum, src/feeds/).
   * Computed at upload; releases stored before it get it from the background
   * backfill (src/feeds/backfill.ts).
   */
  checksum_sha512?: string;
  /**
   * SHA-1 of the artifact, hex (Squirrel.Windows' `RELEASES` names it):
   * computed the first time a Squirrel.Windows feed lists the release
   * (src/feeds/squirrel.ts), then kept here.
   */
  checksum_sha1?: string;
  /** The Tauri updater's signature: the base64 text of the minisign `.sig` file, as uploaded. */
  tauri_signature?: string;
  /** Sparkle's EdDSA (Ed25519) signature of the artifact, base64, as uploaded. */
  sparkle_signature?: string;
}

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
