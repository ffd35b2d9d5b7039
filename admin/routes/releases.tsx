/** Archiving and re-activating releases (uploads are in `upload.tsx`). */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import { getProject } from "../../src/projects/projects.ts";
import { getRelease, setReleaseState } from "../../src/releases/releases.ts";
import { audit, redirectWithFlash } from "../context.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import { projectTabPath } from "../views/project.tsx";

export function addReleaseRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  for (const [action, state] of [["archive", "archived"], ["activate", "active"]] as const) {
    admin.post(`/releases/:id/${action}`, async (c) => {
      const raw = c.req.param("id");
      const release = ID_PATTERN.test(raw) ? await getRelease(c.var.store, Number(raw)) : null;
      if (release === null) {
        throw new HTTPException(404, { message: `There is no release ${raw}.` });
      }
      await setReleaseState(c.var.store, release.id, state);
      const project = await getProject(c.var.store, release.project_id);
      await audit(c, deps, {
        action: `release.${action}`,
        target: `release ${release.id}`,
        details: `project ${project?.slug ?? release.project_id}; version ${release.version}`,
      });
      return redirectWithFlash(c, deps, {
        location: project
          ? `${projectTabPath(project.slug, "releases")}#releases`
          : "/admin/projects",
        kind: "success",
        text: state === "archived"
          ? `Release ${release.version} was archived.`
          : `Release ${release.version} is active again.`,
      });
    });
  }
}
