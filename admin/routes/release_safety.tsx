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
  rollBack,
  setMinimumVersion,
  setReleaseCritical,
} from "../../src/store/release_policy.ts";
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
/** The chart's span. */
const CHART_HOURS = 7 * 24;

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
  { project, rollout, form }: {
    project: Project;
    rollout: Rollout | null;
    form?: { values: SafetyValues; error: FormError };
  },
): Promise<Omit<ReleaseSafetyCardProps, "csrfToken" | "slug">> {
  const [gates, policy, releases] = await Promise.all([
    getRolloutGates(store, project.id),
    getReleasePolicy(store, project.id),
    listReleasesByProject(store, project.id, SCANNED_RELEASES),
  ]);
  const active = releases.filter((release) => release.state === "active");
  let stage: ReleaseSafetyCardProps["stage"] = null;
  if (
    rollout !== null && gates !== null && gates.release_id === rollout.release_id &&
    gates.completed_at === null
  ) {
    const counts = await getReportCounts(store, rollout.release_id);
    const verdict = judgeStage(gates, { rollout, counts, nowMs: Date.now() });
    stage = {
      ...stageFigures(gates, counts),
      waiting: rollout.halted || verdict.action !== "wait" ? null : verdict.waiting,
    };
  }
  const reports: ReleaseReports[] = [];
  for (const release of active.slice(0, REPORTED_RELEASES)) {
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
  const hours = charted === undefined
    ? []
    : await getReportSeries(store, charted.id, Date.now() - CHART_HOURS * 3_600_000);
  return {
    rollout,
    gates,
    stage,
    policy,
    releases: active.map(({ id, version }) => ({ id, version })),
    reports,
    chart: charted === undefined ? null : { version: charted.version, hours },
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

export function addReleaseSafetyRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  /** Runs `change`; a refusal shows the page again with the forms as sent. */
  const attempt = projectChangeAttempt(deps, {
    anchor: "release-safety",
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
