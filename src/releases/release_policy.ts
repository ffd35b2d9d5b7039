/**
 * A project's release policy (docs/rollouts.md "A way back", "Critical
 * updates and a minimum version"): which releases are critical, the minimum
 * supported version, and the last rollback (the release rolled back and the
 * one its clients are offered instead). One record `["release_policy",
 * projectId]`, read with the latest pointer into its read-cache entry
 * (latest_view.ts): every write here names that entry.
 */
import { now, serializedProjectWrite } from "../kv/atomic.ts";
import { changeOp, commitChange } from "../kv/cache.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import {
  latestReleaseKey,
  releaseKey,
  releasePoliciesPrefix,
  releasePolicyKey,
  rolloutKey,
} from "../kv/keys.ts";
import { changeRollout } from "./rollouts.ts";
import { isNewerRelease, listReleasesByProject, makeReleaseLatest } from "./releases.ts";
import type { Release, ReleasePolicy, Rollback, Rollout } from "./types.ts";

export type { ReleasePolicy, Rollback } from "./types.ts";
import type { Store } from "../kv/store.ts";

const EMPTY: ReleasePolicy = { critical_ids: [], minimum_version: null, rolled_back: null };
const VERSION = /^[\x21-\x7e]{1,100}$/;
/** Critical releases kept per project (the newest). */
const CRITICAL_MAX = 100;

/** The project's policy (an empty one when it has none). */
export async function getReleasePolicy(store: Store, projectId: number): Promise<ReleasePolicy> {
  return (await store.kv.get<ReleasePolicy>(releasePolicyKey(projectId))).value ?? EMPTY;
}

/** Every project's policy that has a rollback on record, by project id. */
export async function listRollbacks(store: Store): Promise<Map<number, Rollback>> {
  const rollbacks = new Map<number, Rollback>();
  for await (const entry of store.kv.list<ReleasePolicy>({ prefix: releasePoliciesPrefix() })) {
    const rolledBack = entry.value.rolled_back;
    if (rolledBack !== null) rollbacks.set(entry.key[1] as number, rolledBack);
  }
  return rollbacks;
}

/** Changes the project's policy in one commit naming the latest-release entry. */
async function changePolicy(
  store: Store,
  projectId: number,
  change: (policy: ReleasePolicy) => ReleasePolicy,
): Promise<ReleasePolicy> {
  return await serializedProjectWrite(store, projectId, () =>
    commitChange(store, async () => {
      const entry = await store.kv.get<ReleasePolicy>(releasePolicyKey(projectId));
      const policy = change(entry.value ?? EMPTY);
      const changed = [["latest_release", projectId]] as const;
      const commit = await changeOp(store, changed).check(entry)
        .set(releasePolicyKey(projectId), policy).commit();
      return { commit, value: policy, changed };
    }));
}

/** Marks a release critical (or not). */
export async function setReleaseCritical(
  store: Store,
  { releaseId, critical }: { releaseId: number; critical: boolean },
): Promise<ReleasePolicy> {
  const release = (await store.kv.get<Release>(releaseKey(releaseId))).value;
  if (release === null) throw new NotFoundError("release not found");
  return await changePolicy(store, release.project_id, (policy) => {
    const others = policy.critical_ids.filter((id) => id !== releaseId);
    return {
      ...policy,
      critical_ids: critical ? [...others, releaseId].slice(-CRITICAL_MAX) : others,
    };
  });
}

/** Sets (or, with null or "", clears) the project's minimum supported version. */
export async function setMinimumVersion(
  store: Store,
  { projectId, version }: { projectId: number; version: string | null },
): Promise<ReleasePolicy> {
  const value = version === null || version.trim() === "" ? null : version.trim();
  if (value !== null && !VERSION.test(value)) {
    throw new ValidationError(
      "minimum_version",
      "minimum_version must be 1 to 100 printable ASCII characters without spaces",
    );
  }
  return await changePolicy(store, projectId, (policy) => ({ ...policy, minimum_version: value }));
}

/** What "Roll back" would do now: the release it takes back and the one its clients get instead. */
export interface RollbackPlan {
  from: Release;
  to: Release;
  /**
   * Whether the button is offered: `from` is the project's newest active release and not
   * already rolled back (a release that is not the newest has nothing newer to take back).
   */
  offered: boolean;
}

/**
 * The rollback the project's state calls for (the rule `rollBack` follows): a rollout's
 * release back to its previous release, else the latest back to the newest active release
 * before it; null when there is nothing to go back to. It reads the project's whole release
 * list; the rule itself is `rollBackPlanOf`.
 */
export async function planRollBack(store: Store, projectId: number): Promise<RollbackPlan | null> {
  const [rollout, latestId, policy, releases] = await Promise.all([
    store.kv.get<Rollout>(rolloutKey(projectId)).then((entry) => entry.value),
    store.kv.get<number | null>(latestReleaseKey(projectId)).then((entry) => entry.value),
    getReleasePolicy(store, projectId),
    listReleasesByProject(store, projectId),
  ]);
  return rollBackPlanOf({ rollout, latestId, policy, releases });
}

/**
 * The rollback the project's state calls for (see `planRollBack`), from the project's rollout,
 * its latest pointer, its release policy and its releases: all of them for a rollback, the
 * newest few a page looks among.
 */
export function rollBackPlanOf(
  { rollout, latestId, policy, releases }: {
    rollout: Rollout | null;
    latestId: number | null;
    policy: ReleasePolicy;
    releases: readonly Release[];
  },
): RollbackPlan | null {
  const active = releases.filter((release) => release.state === "active")
    .sort((x, y) => isNewerRelease(x, y) ? -1 : 1);
  const byId = (id: number | null | undefined) =>
    releases.find((release) => release.id === id) ?? null;
  let from: Release | null;
  let to: Release | null;
  if (rollout !== null) {
    from = byId(rollout.release_id);
    to = byId(rollout.previous_id);
  } else {
    from = byId(latestId);
    to = from === null ? null : active.find((release) => isNewerRelease(from!, release)) ?? null;
  }
  if (from === null || to === null) return null;
  const rolledBack = policy.rolled_back !== null && policy.rolled_back.release_id === from.id &&
    (rollout === null ? latestId === policy.rolled_back.to_id : rollout.halted);
  return { from, to, offered: active[0]?.id === from.id && !rolledBack };
}

/**
 * Rolls back the project's newest release: a rollout's release (the rollout
 * is halted: everyone gets its previous release), else the latest (the
 * newest active release before it becomes the chosen latest). Its clients
 * are then offered the release before it, marked as a rollback.
 */
export async function rollBack(store: Store, projectId: number): Promise<Rollback> {
  const rollout = (await store.kv.get<Rollout>(rolloutKey(projectId))).value;
  const latestId = (await store.kv.get<number | null>(latestReleaseKey(projectId))).value;
  if (rollout === null && latestId === null) {
    throw new ValidationError("rollback", "the project has no latest release");
  }
  const plan = await planRollBack(store, projectId);
  if (plan === null) {
    if (rollout !== null) throw new NotFoundError("release not found");
    throw new ValidationError("rollback", "there is no earlier active release to go back to");
  }
  const { from: bad, to } = plan;
  if (rollout !== null) {
    if (!rollout.halted) await changeRollout(store, projectId, { halted: true });
  } else {
    await makeReleaseLatest(store, to.id);
  }
  const rollback: Rollback = { release_id: bad.id, version: bad.version, to_id: to.id, at: now() };
  await changePolicy(store, projectId, (policy) => ({ ...policy, rolled_back: rollback }));
  return rollback;
}

/**
 * The headers the latest-release answer of `release` carries under `policy`
 * (none for most projects): `X-Update-Critical`, `X-Minimum-Version`,
 * `X-Rolled-Back`.
 */
export function policyHeaders(policy: ReleasePolicy, release: Release): [string, string][] {
  const headers: [string, string][] = [];
  if (policy.critical_ids.includes(release.id)) headers.push(["x-update-critical", "true"]);
  if (policy.minimum_version !== null) {
    headers.push(["x-minimum-version", policy.minimum_version]);
  }
  if (policy.rolled_back !== null && policy.rolled_back.to_id === release.id) {
    headers.push(["x-rolled-back", policy.rolled_back.version]);
  }
  return headers;
}
