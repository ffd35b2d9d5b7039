/**
 * Retention policies and their runs: the KV side. The rule (which releases a
 * policy deletes) and the background runs are src/lifecycle/retention.ts.
 *
 * A run of a project's policy is leased in `["retention_runs", projectId]`:
 * an instance claims it with a checked commit (so one instance runs a
 * project's policy at a time, and instances share the projects between
 * them); a lease not given back within {@link RUN_STALE_MS} (its instance
 * died) is taken over.
 */
import { now } from "./atomic.ts";
import { ValidationError } from "./errors.ts";
import { retentionPoliciesPrefix, retentionPolicyKey, retentionRunKey } from "./keys.ts";
import type { RetentionPolicy } from "./types.ts";

/** The largest `keep_active` and `archived_max_days` accepted. */
export const RETENTION_MAX = 100_000;
/** A run that has not finished after this long is taken over. */
const RUN_STALE_MS = 10 * 60_000;

/** A policy that deletes nothing. */
export const NO_RETENTION: RetentionPolicy = { keep_active: null, archived_max_days: null };

export function isRetentionOff(policy: RetentionPolicy): boolean {
  return policy.keep_active === null && policy.archived_max_days === null;
}

function readLimit(field: string, raw: string | number | null | undefined): number | null {
  const text = String(raw ?? "").trim();
  if (text === "") return null;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > RETENTION_MAX) {
    throw new ValidationError(
      field,
      `${field} must be a whole number from 1 to ${RETENTION_MAX}, or empty for none`,
    );
  }
  return Number(text);
}

/** A policy from form or API values (empty: that rule is off). */
export function parseRetentionPolicy(
  input: { keep_active?: string | number | null; archived_max_days?: string | number | null },
): RetentionPolicy {
  return {
    keep_active: readLimit("keep_active", input.keep_active),
    archived_max_days: readLimit("archived_max_days", input.archived_max_days),
  };
}

/** The project's policy; a project without one keeps everything. */
export async function getRetentionPolicy(
  kv: Deno.Kv,
  projectId: number,
): Promise<RetentionPolicy> {
  return (await kv.get<RetentionPolicy>(retentionPolicyKey(projectId))).value ?? NO_RETENTION;
}

/** Stores a project's policy (a policy that deletes nothing is removed); hands back the one before. */
export async function setRetentionPolicy(
  kv: Deno.Kv,
  projectId: number,
  policy: RetentionPolicy,
): Promise<RetentionPolicy> {
  const checked = parseRetentionPolicy(policy);
  const before = await getRetentionPolicy(kv, projectId);
  if (isRetentionOff(checked)) await kv.delete(retentionPolicyKey(projectId));
  else await kv.set(retentionPolicyKey(projectId), checked);
  return before;
}

/** The projects that have a policy, with it. */
export async function listRetentionPolicies(
  kv: Deno.Kv,
): Promise<Array<{ projectId: number; policy: RetentionPolicy }>> {
  const policies: Array<{ projectId: number; policy: RetentionPolicy }> = [];
  for await (const entry of kv.list<RetentionPolicy>({ prefix: retentionPoliciesPrefix() })) {
    policies.push({ projectId: Number(entry.key[1]), policy: entry.value });
  }
  return policies;
}

/** The lease and last run of a project's policy. */
export interface RetentionRun {
  /** The instance running it now, and since when; null when none is. */
  running: { by: string; since: string } | null;
  last_run_at: string | null;
}

/**
 * Claims the next run of a project's policy for `instance`: refused (false)
 * while another instance runs it, or when it ran less than `everyMs` ago.
 */
export async function claimRetentionRun(
  kv: Deno.Kv,
  { projectId, instance, everyMs }: { projectId: number; instance: string; everyMs: number },
): Promise<boolean> {
  const entry = await kv.get<RetentionRun>(retentionRunKey(projectId));
  const run = entry.value;
  const nowMs = Date.now();
  if (run?.running && nowMs - Date.parse(run.running.since) < RUN_STALE_MS) return false;
  if (run?.last_run_at && nowMs - Date.parse(run.last_run_at) < everyMs) return false;
  const claim = await kv.atomic().check(entry).set(
    retentionRunKey(projectId),
    {
      running: { by: instance, since: now() },
      last_run_at: run?.last_run_at ?? null,
    } satisfies RetentionRun,
  ).commit();
  return claim.ok;
}

/** Gives a claimed run back, marking when it ran (only while `instance` still holds it). */
export async function finishRetentionRun(
  kv: Deno.Kv,
  { projectId, instance }: { projectId: number; instance: string },
): Promise<void> {
  const entry = await kv.get<RetentionRun>(retentionRunKey(projectId));
  if (entry.value?.running?.by !== instance) return;
  await kv.atomic().check(entry).set(
    retentionRunKey(projectId),
    { running: null, last_run_at: now() } satisfies RetentionRun,
  ).commit();
}
