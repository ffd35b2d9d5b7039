/**
 * What the latest-release answers read on every request, as one read-cache
 * entry (`["latest_release", projectId]`): the latest pointer's release and
 * the project's staged rollout, if one applies (rollouts.ts). Every write of
 * either names that entry in its `changed`, so instances see it within the
 * cache's bound. A rollout applies only while its previous release is still
 * the latest and its release is active; anything else (an archived or
 * deleted release, another latest) makes it inert until it is ended.
 */
import { cachedRead, type MaybeAsync } from "../kv/cache.ts";
import { latestReleaseKey, releaseKey, releasePolicyKey, rolloutKey } from "../kv/keys.ts";
import type { Release, ReleasePolicy, Rollout } from "./types.ts";
import type { Store } from "../kv/store.ts";

/** A rollout in force, with what the hot path needs at hand. */
export interface LiveRollout {
  record: Rollout;
  /** The release rolled out (newer than the latest). */
  release: Release;
  /** The schedule's steps as times in ms, in order. */
  steps: ReadonlyArray<{ atMs: number; percentage: number }>;
}

export interface LatestView {
  /** The latest pointer's release (what every client gets without a rollout). */
  release: Release | null;
  rollout: LiveRollout | null;
  /** The project's release policy (release_policy.ts), or null when it says nothing. */
  policy: ReleasePolicy | null;
}

const NO_LATEST: LatestView = { release: null, rollout: null, policy: null };

/**
 * The latest pointer's release and the rollout in force. A project without a
 * latest release is not cached (like every read that found nothing: a
 * project whose first release is on its way is asked again each time).
 */
export function getLatestView(store: Store, projectId: number): MaybeAsync<LatestView> {
  const view = cachedRead(store, {
    name: "latest_release",
    id: projectId,
    load: () => loadLatestView(store, projectId),
  });
  // Spelled out rather than through `thenRead`: no closure on the hot path.
  if (view instanceof Promise) return view.then((found) => found ?? NO_LATEST);
  return view ?? NO_LATEST;
}

async function loadLatestView(store: Store, projectId: number): Promise<LatestView | null> {
  const [pointer, rolloutEntry, policyEntry] = await store.kv.getMany<
    [number | null, Rollout, ReleasePolicy]
  >([latestReleaseKey(projectId), rolloutKey(projectId), releasePolicyKey(projectId)]);
  const policy = policyEntry.value;
  const id = pointer.value;
  // No latest release: no rollout can apply either (it rolls out from the latest).
  if (id === null) return null;
  const rollout = rolloutEntry.value;
  const [latest, candidate] = await store.kv.getMany<[Release, Release]>([
    releaseKey(id),
    releaseKey(rollout?.release_id ?? 0),
  ]);
  const release = latest.value;
  if (release === null) return null;
  const live = rollout !== null && rollout.previous_id === release.id &&
    candidate.value !== null && candidate.value.state === "active";
  return {
    release,
    policy: policy === null || isEmptyPolicy(policy) ? null : policy,
    rollout: live
      ? {
        record: rollout,
        release: candidate.value!,
        steps: rollout.schedule
          .map((step) => ({ atMs: Date.parse(step.at), percentage: step.percentage }))
          .sort((a, b) => a.atMs - b.atMs),
      }
      : null,
  };
}

/** Whether the policy says anything (the latest view keeps null for a policy that says nothing). */
export function isEmptyPolicy(policy: ReleasePolicy): boolean {
  return policy.critical_ids.length === 0 && policy.minimum_version === null &&
    policy.rolled_back === null;
}
