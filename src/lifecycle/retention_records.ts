/**
 * Retention policies and their runs: the KV side. The policy itself (its
 * fields and limits) is src/projects/retention_policy.ts, since a new project
 * is made with one; the rule (which releases a policy deletes) and the
 * background runs are src/lifecycle/retention.ts.
 *
 * A run of a project's policy is leased (leases.ts, `["retention_run",
 * projectId]`), so one instance runs a project's policy at a time and
 * instances share the projects between them; a lease not given back within
 * {@link RUN_STALE_MS} (its instance died) is taken over. When it last ran is
 * kept in `["retention_runs", projectId]`, written as the lease is given back.
 */
import { now } from "../kv/atomic.ts";
import {
  type LeaseName,
  retentionPoliciesPrefix,
  retentionPolicyKey,
  retentionRunKey,
} from "../kv/keys.ts";
import { claimLease, releaseLease } from "../kv/leases.ts";
import {
  isRetentionOff,
  NO_RETENTION,
  parseRetentionPolicy,
  type RetentionPolicy,
} from "../projects/retention_policy.ts";
import type { Store } from "../kv/store.ts";

/** A run that has not finished after this long is taken over. */
const RUN_STALE_MS = 10 * 60_000;

/** The project's policy; a project without one keeps everything. */
export async function getRetentionPolicy(
  store: Store,
  projectId: number,
): Promise<RetentionPolicy> {
  return (await store.kv.get<RetentionPolicy>(retentionPolicyKey(projectId))).value ?? NO_RETENTION;
}

/** Stores a project's policy (a policy that deletes nothing is removed); hands back the one before. */
export async function setRetentionPolicy(
  store: Store,
  projectId: number,
  policy: RetentionPolicy,
): Promise<RetentionPolicy> {
  const checked = parseRetentionPolicy(policy);
  const before = await getRetentionPolicy(store, projectId);
  if (isRetentionOff(checked)) await store.kv.delete(retentionPolicyKey(projectId));
  else await store.kv.set(retentionPolicyKey(projectId), checked);
  return before;
}

/** The projects that have a policy, with it. */
export async function listRetentionPolicies(
  store: Store,
): Promise<Array<{ projectId: number; policy: RetentionPolicy }>> {
  const policies: Array<{ projectId: number; policy: RetentionPolicy }> = [];
  for await (const entry of store.kv.list<RetentionPolicy>({ prefix: retentionPoliciesPrefix() })) {
    policies.push({ projectId: Number(entry.key[1]), policy: entry.value });
  }
  return policies;
}

/** When a project's policy last ran. */
export interface RetentionRun {
  last_run_at: string | null;
}

/** The lease of a project's retention run (a project delete drops it too). */
export function retentionRunLease(projectId: number): LeaseName {
  return ["retention_run", projectId];
}

/** Whether the project's policy ran less than `everyMs` ago. */
async function ranWithin(store: Store, projectId: number, everyMs: number): Promise<boolean> {
  const run = (await store.kv.get<RetentionRun>(retentionRunKey(projectId))).value;
  return !!run?.last_run_at && Date.now() - Date.parse(run.last_run_at) < everyMs;
}

/**
 * Claims the next run of a project's policy for `instance`: refused (false)
 * while another instance runs it, or when it ran less than `everyMs` ago.
 */
export async function claimRetentionRun(
  store: Store,
  { projectId, instance, everyMs }: { projectId: number; instance: string; everyMs: number },
): Promise<boolean> {
  if (await ranWithin(store, projectId, everyMs)) return false;
  const lease = { holder: instance, ttlMs: RUN_STALE_MS };
  if (!await claimLease(store, retentionRunLease(projectId), lease)) return false;
  // Under the lease: a run that finished since the first look has left its time.
  if (await ranWithin(store, projectId, everyMs)) {
    await releaseLease(store, retentionRunLease(projectId), { holder: instance });
    return false;
  }
  return true;
}

/** Gives a claimed run back, marking when it ran (only while no other instance has taken it over). */
export async function finishRetentionRun(
  store: Store,
  { projectId, instance }: { projectId: number; instance: string },
): Promise<void> {
  await releaseLease(store, retentionRunLease(projectId), {
    holder: instance,
    also: (op) => op.set(retentionRunKey(projectId), { last_run_at: now() } satisfies RetentionRun),
  });
}
