/**
 * "Make latest" and "Publish" on the project page (docs/publishing.md
 * "Drafts and a chosen latest"); archive and activate are in `releases.tsx`.
 */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import { getProject } from "../../src/projects/projects.ts";
import {
  getRelease,
  makeReleaseLatest,
  NotActiveError,
  publishDraft,
} from "../../src/releases/releases.ts";
import type { Release } from "../../src/releases/types.ts";
import { audit, redirectWithFlash } from "../context.ts";
import { field } from "../forms.ts";
import type { Store } from "../../src/kv/store.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import { projectTabPath } from "../views/project.tsx";

export function addReleaseLatestRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  const actions = [
    [
      "make-latest",
      "make_latest",
      (store: Store, release: Release) => makeReleaseLatest(store, release.id),
    ],
    [
      "publish",
      "publish",
      (store: Store, release: Release, notLatest: boolean) =>
        publishDraft(store, release.id, { makeLatest: !notLatest }),
    ],
  ] as const;
  for (const [path, action, change] of actions) {
    admin.post(`/releases/:id/${path}`, async (c) => {
      const raw = c.req.param("id");
      const release = ID_PATTERN.test(raw) ? await getRelease(c.var.store, Number(raw)) : null;
      if (release === null) {
        throw new HTTPException(404, { message: `There is no release ${raw}.` });
      }
      const project = await getProject(c.var.store, release.project_id);
      const back = project
        ? `${projectTabPath(project.slug, "releases")}#releases`
        : "/admin/projects";
      const notLatest = field(c.get("form"), "not_latest") !== "";
      try {
        await change(c.var.store, release, notLatest);
      } catch (error) {
        if (!(error instanceof NotActiveError)) throw error;
        return redirectWithFlash(c, deps, {
          location: back,
          kind: "error",
          text:
            `Release ${release.version} is ${release.state}: only an active release can be latest.`,
        });
      }
      await audit(c, deps, {
        action: `release.${action}`,
        target: `release ${release.id}`,
        details: `project ${project?.slug ?? release.project_id}; version ${release.version}${
          notLatest ? "; not latest" : ""
        }`,
      });
      return redirectWithFlash(c, deps, {
        location: back,
        kind: "success",
        text: path === "publish"
          ? `Release ${release.version} was published${notLatest ? "" : " and is latest"}.`
          : `Release ${release.version} is now the latest release (chosen).`,
      });
    });
  }
}
