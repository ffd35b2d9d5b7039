/**
 * The staged rollout of a project from its page (docs/rollouts.md): start
 * one for a release, change it (widen, narrow, schedule, tester tag), halt,
 * resume, complete or end it, each through the store and audit-logged.
 * Bad input shows the project page again with the form and its error.
 */
import type { Hono } from "hono";
import { ValidationError } from "../../src/kv/errors.ts";
import { getRelease } from "../../src/releases/releases.ts";
import {
  changeRollout,
  completeRollout,
  endRollout,
  parseSchedule,
  startRollout,
} from "../../src/releases/rollouts.ts";
import type { Project } from "../../src/projects/types.ts";
import type { Rollout } from "../../src/releases/types.ts";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import type { AdminContext } from "../context.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import { hasHalfFilledScheduleRow, rolloutFormValues } from "../forms_rollout.ts";
import { loadProject } from "./project_page.tsx";
import { projectChangeAttempt } from "./project_change.ts";

/** The audit details of a rollout: what clients get now. */
function details(project: Project, rollout: Rollout): string {
  const steps = rollout.schedule.map((step) => `${step.at}=${step.percentage}%`).join(", ");
  return `project ${project.slug}; release ${rollout.release_id} over ${rollout.previous_id}; ` +
    `${rollout.percentage}%` + (rollout.halted ? "; halted" : "") +
    (steps === "" ? "" : `; schedule ${steps}`) +
    (rollout.tester_tag === null ? "" : `; testers ${rollout.tester_tag}`);
}

export function addRolloutRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  /** A schedule row with only a time or only a percentage is refused before anything else. */
  function checkScheduleRows(c: AdminContext): void {
    if (hasHalfFilledScheduleRow(c.get("form"))) {
      throw new ValidationError("schedule", "give each schedule step both a time and a percentage");
    }
  }

  /** Runs `change`; a refusal shows the page again with the form as sent. */
  const attempt = projectChangeAttempt(deps, {
    anchor: "rollout",
    tab: "rollout",
    refused: (c, error) => ({ rollout: { values: rolloutFormValues(c.get("form")), error } }),
  });

  admin.post("/projects/:slug/rollout", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const values = rolloutFormValues(c.get("form"));
    return await attempt(c, project, async () => {
      if (!ID_PATTERN.test(values.release_id)) {
        throw new ValidationError("release_id", "choose the release to roll out");
      }
      const release = await getRelease(c.var.store, Number(values.release_id));
      if (release === null || release.project_id !== project.id) {
        throw new ValidationError("release_id", "choose a release of this project");
      }
      checkScheduleRows(c);
      const rollout = await startRollout(c.var.store, release.id, {
        // parsePercentage reads the text of a form field.
        percentage: values.percentage as unknown as number,
        schedule: parseSchedule(values.schedule),
        tester_tag: values.tester_tag,
      });
      return {
        action: "rollout.start",
        details: details(project, rollout),
        text: `The rollout of release ${rollout.release_id} started at ${rollout.percentage}%.`,
      };
    });
  });

  admin.post("/projects/:slug/rollout/change", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const values = rolloutFormValues(c.get("form"));
    return await attempt(c, project, async () => {
      checkScheduleRows(c);
      const rollout = await changeRollout(c.var.store, project.id, {
        ...(values.percentage.trim() === ""
          ? {}
          : { percentage: values.percentage as unknown as number }),
        schedule: parseSchedule(values.schedule),
        tester_tag: values.tester_tag,
      });
      return {
        action: "rollout.change",
        details: details(project, rollout),
        text: `The rollout now reaches ${rollout.percentage}% of clients.`,
      };
    });
  });

  for (const [action, halted] of [["halt", true], ["resume", false]] as const) {
    admin.post(`/projects/:slug/rollout/${action}`, async (c) => {
      const project = await loadProject(c.var.store, c.req.param("slug"));
      return await attempt(c, project, async () => {
        const rollout = await changeRollout(c.var.store, project.id, { halted });
        return {
          action: `rollout.${action}`,
          details: details(project, rollout),
          text: halted
            ? "The rollout is halted: every client gets the previous release."
            : `The rollout resumed at ${rollout.percentage}%.`,
        };
      });
    });
  }

  admin.post("/projects/:slug/rollout/complete", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    return await attempt(c, project, async () => {
      const release = await completeRollout(c.var.store, project.id);
      return {
        action: "rollout.complete",
        details: `project ${project.slug}; release ${release.id} is latest`,
        text: `Release ${release.version} is now the latest for every client.`,
      };
    });
  });

  admin.post("/projects/:slug/rollout/end", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    return await attempt(c, project, async () => {
      const ended = await endRollout(c.var.store, project.id);
      return {
        action: "rollout.end",
        details: ended === null ? `project ${project.slug}; none` : details(project, ended),
        text: "The rollout ended: every client gets the latest release.",
      };
    });
  });
}
