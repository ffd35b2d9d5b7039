/**
 * Release safety from a project's page (docs/rollouts.md "Health gates", "A
 * way back", "Critical updates and a minimum version"): set the rollout's
 * gates, roll back the newest release, mark critical releases and the
 * minimum version; each audit-logged, bad input shown again on the page.
 * What the card shows is release_safety_card.ts.
 */
import type { Hono } from "hono";
import {
  rollBack,
  setMinimumVersion,
  setReleaseCritical,
} from "../../src/releases/release_policy.ts";
import { listReleasesByProject } from "../../src/releases/releases.ts";
import { parseGates, setRolloutGates } from "../../src/rollouts/gate_records.ts";
import type { AdminContext } from "../context.ts";
import { field } from "../forms.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import { type SafetyValues } from "../views/release_safety.tsx";
import { loadProject } from "./project_page.tsx";
import { projectChangeAttempt } from "./project_change.ts";
import { SCANNED_RELEASES } from "./release_safety_card.ts";

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
