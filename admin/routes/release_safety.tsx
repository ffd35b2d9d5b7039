/**
 * Release safety from a project's page (docs/rollouts.md "Health gates", "A
 * way back", "Critical updates and a minimum version"): set the rollout's
 * gates, roll back the newest release, mark critical releases and the
 * minimum version; each audit-logged, bad input shown again on the page.
 * Also what the card shows (`releaseSafetyOf`).
 */
import type { Store } from "../../src/kv/store.ts";
import type { Hono } from "hono";
import { judgeStage } from "../../src/rollouts/gates.ts";
import {
  getReleasePolicy,
  planRollBack,
  rollBack,
  setMinimumVersion,
  setReleaseCritical,
} from "../../src/store/release_policy.ts";
import { type AuditEntry, listAuditEntries } from "../../src/kv/audit.ts";
import { listReleasesByProject } from "../../src/store/releases.ts";
import {
  getReportCounts,
  getReportEstimates,
  getReportReasons,
  getReportSeries,
} from "../../src/reports/reports.ts";
import {
  getRolloutGates,
  parseGates,
  setRolloutGates,
  stageFigures,
} from "../../src/rollouts/gate_records.ts";
import type { Project, Rollout } from "../../src/store/types.ts";
import type { AdminContext } from "../context.ts";
import { field } from "../forms.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import type { StageRow } from "../views/release_health.tsx";
import {
  EMPTY_SAFETY_FORM,
  type ReleaseReports,
  type ReleaseSafetyCardProps,
  type SafetyValues,
} from "../views/release_safety.tsx";
import { loadProject } from "./project_page.tsx";
import { projectChangeAttempt } from "./project_change.ts";

/** Releases whose reports the card lists (the newest). */
const REPORTED_RELEASES = 5;
/**
 * The newest releases the card looks among for active ones: a few more than it lists, and a
 * fixed number, so the project page reads the same however many releases the project has.
 */
const SCANNED_RELEASES = 2 * REPORTED_RELEASES;
/** The health charts' span: 30 days. */
const CHART_HOURS = 30 * 24;
/** Audit entries the rollout history looks through (newest first), and the rows it shows. */
const HISTORY_SCAN = 500;
const HISTORY_ROWS = 8;
/** How close an audit entry must be to a stage's end to say why it ended. */
const WHY_WINDOW_MS = 120_000;

function valuesOf(c: AdminContext): SafetyValues {
  const form = c.get("form");
  return {
    stages: field(form, "stages"),
    min_installs: field(form, "min_installs"),
    min_hours: field(form, "min_hours"),
    advance_below: field(form, "advance_below"),
    halt_at: field(form, "halt_at"),
    minimum_version: field(form, "minimum_version"),
  };
}

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
  const [gates, policy, releases, plan, history] = await Promise.all([
    getRolloutGates(store, project.id),
    getReleasePolicy(store, project.id),
    listReleasesByProject(store, project.id, SCANNED_RELEASES),
    detail ? planRollBack(store, project.id, SCANNED_RELEASES) : null,
    detail ? rolloutHistory(store, project.id) : [],
  ]);
  const active = releases.filter((release) => release.state === "active");
  const gated = rollout !== null && gates !== null && gates.release_id === rollout.release_id &&
    gates.completed_at === null;
  let stage: ReleaseSafetyCardProps["stage"] = null;
  if (gated) {
    const counts = await getReportCounts(store, rollout!.release_id);
    const verdict = judgeStage(gates!, { rollout: rollout!, counts, nowMs });
    stage = {
      ...stageFigures(gates!, counts),
      waiting: rollout!.halted || verdict.action !== "wait" ? null : verdict.waiting,
    };
  }
  const haltReason = rollout?.halted
    ? (gated && gates!.halt_reason !== null ? gates!.halt_reason : "halted by hand")
    : null;
  const reports: ReleaseReports[] = [];
  for (const release of detail ? active.slice(0, REPORTED_RELEASES) : []) {
    const [counts, estimated, reasons] = await Promise.all([
      getReportCounts(store, release.id),
      getReportEstimates(store, release.id),
      getReportReasons(store, release.id),
    ]);
    if (Object.values(counts).some((n) => n > 0) || Object.values(estimated).some((n) => n > 0)) {
      reports.push({ id: release.id, version: release.version, counts, estimated, reasons });
    }
  }
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
      history: history.slice(0, HISTORY_ROWS),
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
  const details = best.details.replace(/^project [^;]*; ?/, "");
  return best.actor === "rollout gates"
    ? `by the gates: ${details}`
    : `by ${best.actor} (${best.action.replace(/^rollout\./, "")})`;
}

export function addReleaseSafetyRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  /** Runs `change`; a refusal shows the page again with the forms as sent. */
  const attempt = projectChangeAttempt(deps, {
    anchor: "release-safety",
    tab: "rollout",
    refused: (c, error) => ({ safety: { values: valuesOf(c), error } }),
  });

  admin.post("/projects/:slug/rollout/gates", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const values = valuesOf(c);
    return await attempt(c, project, async () => {
      const gates = values.stages.trim() === "" ? null : parseGates({ ...values });
      await setRolloutGates(c.var.store, { projectId: project.id, gates });
      const text = gates === null
        ? "off"
        : `stages ${gates.stages.join(", ")}%; ${gates.min_installs} installs, ` +
          `${gates.min_hours} h, advance below ${gates.advance_below}%, halt at ${gates.halt_at}%`;
      return {
        action: "rollout.gates",
        details: `project ${project.slug}; gates ${text}`,
        text: gates === null ? "The rollout has no gates now." : `Gates set: ${text}.`,
      };
    });
  });

  admin.post("/projects/:slug/rollout/rollback", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    return await attempt(c, project, async () => {
      const rollback = await rollBack(c.var.store, project.id);
      return {
        action: "rollout.rollback",
        details: `project ${project.slug}; release ${rollback.release_id} rolled back to ` +
          `release ${rollback.to_id}`,
        text: `Release ${rollback.version} is rolled back: its clients are offered release ` +
          `${rollback.to_id} (X-Rolled-Back).`,
      };
    });
  });

  admin.post("/projects/:slug/rollout/policy", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const values = valuesOf(c);
    const critical = new Set((c.get("form").critical ?? []).map(Number));
    return await attempt(c, project, async () => {
      const policy = await setMinimumVersion(c.var.store, {
        projectId: project.id,
        version: values.minimum_version,
      });
      // The releases the card lists boxes for: a critical release beyond them keeps its mark.
      const active = (await listReleasesByProject(c.var.store, project.id, SCANNED_RELEASES))
        .filter((release) => release.state === "active");
      for (const release of active) {
        const marked = policy.critical_ids.includes(release.id);
        if (marked !== critical.has(release.id)) {
          await setReleaseCritical(c.var.store, { releaseId: release.id, critical: !marked });
        }
      }
      const ids = active.filter((release) => critical.has(release.id)).map((release) => release.id);
      return {
        action: "rollout.policy",
        details: `project ${project.slug}; minimum version ${policy.minimum_version ?? "none"}; ` +
          `critical releases ${ids.join(", ") || "none"}`,
        text: "The release policy is saved.",
      };
    });
  });
}
