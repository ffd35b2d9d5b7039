/**
 * Retention: which releases a project's policy deletes ({@link planRetention},
 * also the project page's dry run), and the background runs that delete them
 * ({@link runRetention}, {@link scheduleRetention}).
 *
 * The rule: of the active releases (newest first, "latest" order), those
 * beyond the newest `keep_active`; and archived releases created more than
 * `archived_max_days` days ago. The latest release (chosen or not) and drafts
 * are never deleted; the latest counts among the kept when it is one of the
 * newest, else it is kept besides them.
 *
 * Runs delete through the ordinary delete path (src/lifecycle/delete.ts), one
 * release at a time, each commit checking that the release is still in the
 * state the plan saw and is not the latest; a run is leased per project
 * (src/lifecycle/retention_records.ts), so one instance runs a project's
 * policy at a time and several instances share the projects.
 */
import { scheduleJob } from "../lib/background_job.ts";
import type { ArtifactStore } from "../storage/mod.ts";
import { recordAudit } from "../kv/audit.ts";
import { LatestReleaseError, ReleaseStateChangedError } from "./delete_records.ts";
import { NotFoundError } from "../kv/errors.ts";
import { getProjectsByIds } from "../projects/projects.ts";
import { getLatestRelease, isNewerRelease, listReleasesByProject } from "../releases/releases.ts";
import { isRetentionOff, type RetentionPolicy } from "../projects/retention_policy.ts";
import {
  claimRetentionRun,
  finishRetentionRun,
  getRetentionPolicy,
  listRetentionPolicies,
} from "./retention_records.ts";
import type { Project } from "../projects/types.ts";
import type { Release } from "../releases/types.ts";
import { deleteRelease } from "./delete.ts";
import type { Store } from "../kv/store.ts";

const DAY_MS = 86_400_000;

/** A release the policy deletes, and why. */
export interface RetentionCandidate {
  release: Release;
  reason: "beyond the newest active" | "archived too long";
}

/** What a policy deletes now: the releases and their bytes. */
export interface RetentionPlan {
  candidates: RetentionCandidate[];
  bytes: number;
}

/** The releases `policy` deletes among `releases` (pure; see the rule above). */
export function retentionCandidates(
  releases: readonly Release[],
  { policy, latestId, now }: { policy: RetentionPolicy; latestId: number | null; now: Date },
): RetentionPlan {
  const candidates: RetentionCandidate[] = [];
  if (policy.keep_active !== null) {
    const active = releases.filter((release) => release.state === "active")
      .sort((a, b) => isNewerRelease(a, b) ? -1 : isNewerRelease(b, a) ? 1 : 0);
    for (const release of active.slice(policy.keep_active)) {
      if (release.id !== latestId) {
        candidates.push({ release, reason: "beyond the newest active" });
      }
    }
  }
  if (policy.archived_max_days !== null) {
    const before = now.getTime() - policy.archived_max_days * DAY_MS;
    for (const release of releases) {
      if (
        release.state === "archived" && release.id !== latestId &&
        Date.parse(release.created_at) < before
      ) {
        candidates.push({ release, reason: "archived too long" });
      }
    }
  }
  return {
    candidates,
    bytes: candidates.reduce((sum, { release }) => sum + release.size_bytes, 0),
  };
}

/** What `policy` would delete from the project now (the dry run). */
export async function planRetention(
  store: Store,
  { projectId, policy, now = new Date() }: {
    projectId: number;
    policy: RetentionPolicy;
    now?: Date;
  },
): Promise<RetentionPlan> {
  if (isRetentionOff(policy)) return { candidates: [], bytes: 0 };
  const [releases, latest] = await Promise.all([
    listReleasesByProject(store, projectId),
    getLatestRelease(store, projectId),
  ]);
  return retentionCandidates(releases, { policy, latestId: latest?.id ?? null, now });
}

/** One release a run deleted. */
export interface RetentionDeletion {
  project: Pick<Project, "id" | "slug">;
  release: Release;
  reason: RetentionCandidate["reason"];
  /** The artifact stayed (storage failed); the storage sweep removes it. */
  leftForSweep: boolean;
}

export interface RetentionRunOptions {
  /** Names this instance in the lease. */
  instance: string;
  /** A project's policy runs at most once in this long (across instances). */
  everyMs: number;
  /** Told of each release deleted, as it goes (each is also in the audit log, actor `retention`). */
  onDelete?: (deletion: RetentionDeletion) => void | Promise<void>;
  now?: () => Date;
}

/**
 * Runs every project's policy that is due and not running elsewhere; hands
 * back what it deleted. A release that changed since the plan (re-activated,
 * made latest, already deleted) is left alone.
 */
export async function runRetention(
  deps: { store: Store; artifacts: ArtifactStore },
  { instance, everyMs, onDelete, now = () => new Date() }: RetentionRunOptions,
): Promise<RetentionDeletion[]> {
  const { store } = deps;
  const deleted: RetentionDeletion[] = [];
  for (const { projectId } of await listRetentionPolicies(store)) {
    if (!await claimRetentionRun(store, { projectId, instance, everyMs })) continue;
    try {
      const [project] = await getProjectsByIds(store, [projectId]);
      if (project === undefined) continue;
      // Read again under the lease: the policy may have changed since the list.
      const policy = await getRetentionPolicy(store, projectId);
      const plan = await planRetention(store, { projectId, policy, now: now() });
      for (const { release, reason } of plan.candidates) {
        let leftForSweep: boolean;
        try {
          const result = await deleteRelease(deps, release.id, { expectState: release.state });
          leftForSweep = result.leftForSweep.length > 0;
        } catch (error) {
          if (
            error instanceof LatestReleaseError || error instanceof NotFoundError ||
            error instanceof ReleaseStateChangedError
          ) continue;
          throw error;
        }
        const deletion = {
          project: { id: project.id, slug: project.slug },
          release,
          reason,
          leftForSweep,
        };
        deleted.push(deletion);
        await recordAudit(store, {
          actor: "retention",
          action: "release.delete",
          target: `release ${release.id}`,
          details: `project ${project.slug}; version ${release.version}; ${release.state}; ` +
            `${release.size_bytes} bytes; retention: ${reason}` +
            (leftForSweep ? "; artifact left for the storage sweep" : ""),
          address: "-",
        }).catch((error) => console.error("audit record failed (retention):", error));
        await onDelete?.(deletion);
      }
    } finally {
      await finishRetentionRun(store, { projectId, instance });
    }
  }
  return deleted;
}

/**
 * Runs {@link runRetention} now and again `checkEveryMs` after each run (the
 * loop of background jobs, src/lib/background_job.ts; each project's policy
 * still runs at most once per `options.everyMs`); returns the stop function.
 * Failures are reported and the next run tries again.
 */
export function scheduleRetention(
  deps: { store: Store; artifacts: ArtifactStore },
  { checkEveryMs, report, ...options }: RetentionRunOptions & {
    checkEveryMs: number;
    report: (error: unknown) => void;
  },
): () => void {
  return scheduleJob(async () => {
    try {
      await runRetention(deps, options);
    } catch (error) {
      report(error);
    }
    return checkEveryMs;
  });
}
