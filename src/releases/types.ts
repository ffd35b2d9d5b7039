/**
 * Releases, their rollouts and policy as stored in Deno KV. Field names
 * follow the client API where they overlap.
 */

/** A `draft` is stored and listed in the admin UI but invisible to clients until published. */
export type ReleaseState = "active" | "archived" | "draft";

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

/** A step of a rollout's schedule: from `at` on, at least `percentage` of clients. */
export interface RolloutStep {
  at: string;
  percentage: number;
}

/**
 * A staged rollout (src/releases/rollouts.ts): the newer active `release_id`
 * reaches `percentage` % of clients (and keys tagged `tester_tag`); every
 * other client keeps `previous_id`, which stays the latest pointer until the
 * rollout completes. Halted: everyone gets `previous_id`.
 */
export interface Rollout {
  project_id: number;
  release_id: number;
  previous_id: number;
  percentage: number;
  schedule: RolloutStep[];
  halted: boolean;
  tester_tag: string | null;
  started_at: string;
  updated_at: string;
}

/** The last rollback of a project. */
export interface Rollback {
  /** The release rolled back. */
  release_id: number;
  version: string;
  /** The release its clients are offered instead. */
  to_id: number;
  at: string;
}

/** A project's release policy (src/releases/release_policy.ts). */
export interface ReleasePolicy {
  /** Releases marked critical. */
  critical_ids: number[];
  /** The oldest version still supported, or null. */
  minimum_version: string | null;
  rolled_back: Rollback | null;
}
