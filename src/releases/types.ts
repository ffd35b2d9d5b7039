/** Records of releases' rollouts and policy as stored in Deno KV. */

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
