/**
 * What the release safety card shows (docs/rollouts.md "Health gates", "A way
 * back"): the gates and their verdict, the policy's marks, the reports of the
 * newest releases, and on the rollout page the way back and the history.
 */
import type { Store } from "../../src/kv/store.ts";
import { readStage } from "../../src/rollouts/gates.ts";
import { getReleasePolicy, rollBackPlanOf } from "../../src/releases/release_policy.ts";
import { getLatestReleaseId } from "../../src/releases/release_publishing.ts";
import { type AuditEntry, listAuditEntries } from "../../src/kv/audit.ts";
import { listReleasesByProject } from "../../src/releases/releases.ts";
import {
  getReportCounts,
  getReportEstimates,
  getReportReasons,
  getReportSeries,
} from "../../src/reports/reports.ts";
import { getRolloutGates } from "../../src/rollouts/gate_records.ts";
import type { Project } from "../../src/projects/types.ts";
import type { Rollout } from "../../src/releases/types.ts";
import type { FormError } from "../types.ts";
import type { StageRow } from "../views/release_health.tsx";
import {
  EMPTY_SAFETY_FORM,
  type ReleaseReports,
  type ReleaseSafetyCardProps,
  type SafetyValues,
} from "../views/release_safety.tsx";

/** Releases whose reports the card lists (the newest). */
const REPORTED_RELEASES = 5;
/**
 * The newest releases the card looks among for active ones: a few more than it lists, and a
 * fixed number, so the project page reads the same however many releases the project has.
 */
export const SCANNED_RELEASES = 2 * REPORTED_RELEASES;
/** The health charts' span: 30 days. */
const CHART_HOURS = 30 * 24;
/** Audit entries the rollout history looks through (newest first), and the rows it shows. */
const HISTORY_SCAN = 500;
const HISTORY_ROWS = 8;
/** How close an audit entry must be to a stage's end to say why it ended. */
const WHY_WINDOW_MS = 120_000;

/**
 * What the release safety card shows for the project and its `rollout` (as the page read
 * it), with the forms as sent (and their error) if any.
 */
export async function releaseSafetyOf(
  store: Store,
  { project, rollout, form, detail = true }: {
    project: Project;
    rollout: Rollout | null;
    form?: { values: SafetyValues; error: FormError };
    /**
     * The whole card (the rollout page): the way back, reports, charts and history; without
     * it only what the other pages show (the gates' verdict and the policy's marks).
     */
    detail?: boolean;
  },
): Promise<Omit<ReleaseSafetyCardProps, "csrfToken" | "slug">> {
  const nowMs = Date.now();
  const [gates, policy, releases, latestId, history] = await Promise.all([
    getRolloutGates(store, project.id),
    getReleasePolicy(store, project.id),
    detail ? listReleasesByProject(store, project.id, SCANNED_RELEASES) : [],
    // The pointer itself: the page's latest view may come from the read cache.
    detail ? getLatestReleaseId(store, project.id) : null,
    detail ? rolloutHistory(store, project.id) : [],
  ]);
  const plan = detail ? rollBackPlanOf({ rollout, latestId, policy, releases }) : null;
  const active = releases.filter((release) => release.state === "active");
  const reading = await readStage(store, { state: gates, rollout, nowMs });
  const gated = reading !== null;
  const stage: ReleaseSafetyCardProps["stage"] = reading === null ? null : {
    ...reading.figures,
    waiting: rollout!.halted || reading.verdict.action !== "wait" ? null : reading.verdict.waiting,
  };
  const haltReason = rollout?.halted
    ? (gated && gates!.halt_reason !== null ? gates!.halt_reason : "halted by hand")
    : null;
  const read = await Promise.all(
    active.slice(0, REPORTED_RELEASES).map(async (release) => {
      // The gated rollout's release: its counts are the ones the stage was read from.
      const [counts, estimated, reasons] = await Promise.all([
        reading !== null && release.id === rollout!.release_id
          ? reading.counts
          : getReportCounts(store, release.id),
        getReportEstimates(store, release.id),
        getReportReasons(store, release.id),
      ]);
      return { id: release.id, version: release.version, counts, estimated, reasons };
    }),
  );
  const reports: ReleaseReports[] = read.filter(({ counts, estimated }) =>
    Object.values(counts).some((n) => n > 0) || Object.values(estimated).some((n) => n > 0)
  );
  const charted = rollout === null
    ? active[0]
    : releases.find((release) => release.id === rollout.release_id);
  const hours = charted === undefined || !detail
    ? []
    : await getReportSeries(store, charted.id, nowMs - CHART_HOURS * 3_600_000);
  const stages: StageRow[] = gates === null ? [] : gates.stages.map((row) => {
    const live = row.ended_at === null && stage !== null;
    return {
      percentage: row.percentage,
      started_at: row.started_at,
      ended_at: row.ended_at,
      installed: live ? stage!.installed : row.installed,
      failed: live ? stage!.failed : row.failed,
      outcome: row.outcome ?? (live ? "running" : null),
      why: row.ended_at === null ? null : whyEnded(history, row.ended_at),
    };
  });
  return {
    rollout,
    gates,
    gated,
    stage,
    haltReason,
    policy,
    plan,
    releases: active.map(({ id, version }) => ({ id, version })),
    reports,
    health: {
      release: charted === undefined ? null : { id: charted.id, version: charted.version },
      hours,
      nowMs,
      thresholds: gated ? gates!.gates : null,
      stages,
      history: history.slice(0, HISTORY_ROWS).map(historyRowOf),
    },
    values: form?.values ?? (gates === null ? EMPTY_SAFETY_FORM : {
      stages: gates.gates.stages.join(", "),
      min_installs: String(gates.gates.min_installs),
      min_hours: String(gates.gates.min_hours),
      advance_below: String(gates.gates.advance_below),
      halt_at: String(gates.gates.halt_at),
      minimum_version: "",
    }),
    error: form?.error,
  };
}

/** The project's rollout changes in the audit log, newest first (a bounded look back). */
async function rolloutHistory(store: Store, projectId: number): Promise<AuditEntry[]> {
  const { entries } = await listAuditEntries(store, { limit: HISTORY_SCAN });
  return entries.filter((entry) =>
    entry.target === `project ${projectId}` && entry.action.startsWith("rollout.")
  );
}

/** Who ended a stage and why: the audit entry of the change closest to its end. */
function whyEnded(history: readonly AuditEntry[], endedAt: string): string | null {
  const end = Date.parse(endedAt);
  let best: AuditEntry | null = null;
  for (const entry of history) {
    const distance = Math.abs(Date.parse(entry.at) - end);
    if (distance > WHY_WINDOW_MS) continue;
    if (best === null || distance < Math.abs(Date.parse(best.at) - end)) best = entry;
  }
  if (best === null) return null;
  const { actor, action, details } = historyRowOf(best);
  return actor === "rollout gates" ? `by the gates: ${details}` : `by ${actor} (${action})`;
}

/**
 * A rollout change as the history shows it: the change without `rollout.`, the details without
 * the project they name.
 */
function historyRowOf({ at, actor, action, details }: AuditEntry) {
  return {
    at,
    actor,
    action: action.replace(/^rollout\./, ""),
    details: details.replace(/^project [^;]*; ?/, ""),
  };
}
