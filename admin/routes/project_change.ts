/**
 * A change made from a card of the project page (the staged rollout, release
 * safety): run through the store; a refusal shows the page again with the
 * card's forms as sent and the message, a success is audit-logged and
 * redirects to the card with its text.
 */
import type { AuditAction } from "../../src/kv/audit.ts";
import { NotFoundError, ValidationError } from "../../src/kv/errors.ts";
import type { Project } from "../../src/projects/types.ts";
import { type AdminContext, audit, redirectWithFlash } from "../context.ts";
import { formErrorOf } from "../forms.ts";
import type { FormError, RouteDeps } from "../types.ts";
import { type ProjectPageOptions, renderProjectPage } from "./project_page.tsx";
import { type ProjectTab, projectTabPath } from "../views/project.tsx";

/** What a change did: its audit action and details, and the text the admin is shown. */
export interface ProjectChangeDone {
  action: AuditAction;
  details: string;
  text: string;
}

/**
 * The `attempt` of one card's routes: runs `change`; a refusal shows the page
 * again with `refused` (the card's forms as sent, with the message) and 400, a
 * success is audit-logged and leads back to the card (`#anchor`).
 */
export function projectChangeAttempt(
  deps: RouteDeps,
  { anchor, tab, refused }: {
    anchor: string;
    /** The project page the card is on. */
    tab: ProjectTab;
    refused: (
      c: AdminContext,
      error: FormError,
    ) => Omit<ProjectPageOptions, "project" | "status">;
  },
): (
  c: AdminContext,
  project: Project,
  change: () => Promise<ProjectChangeDone>,
) => Promise<Response> {
  return async (c, project, change) => {
    let done;
    try {
      done = await change();
    } catch (error) {
      if (!(error instanceof ValidationError || error instanceof NotFoundError)) throw error;
      const formError = error instanceof ValidationError
        ? formErrorOf(error)
        : { field: "rollout", message: error.message };
      return renderProjectPage(c, deps, { project, ...refused(c, formError), status: 400 });
    }
    await audit(c, deps, {
      action: done.action,
      target: `project ${project.id}`,
      details: done.details,
    });
    return redirectWithFlash(c, deps, {
      location: `${projectTabPath(project.slug, tab)}#${anchor}`,
      kind: "success",
      text: done.text,
    });
  };
}
