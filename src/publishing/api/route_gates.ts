/**
 * The gates of the publishing API's project and release routes (mod.ts,
 * safety.ts): the record the route acts on, and whether the request's publish
 * token covers its project and holds the permission the route needs.
 */
import { createMiddleware } from "hono/factory";
import { ApiError } from "../../http/errors.ts";
import { isSlug, parseIdParam } from "../../lib/limits.ts";
import { tokenCovers, tokenMay } from "../../credentials/tokens.ts";
import { getProject, getProjectBySlug } from "../../projects/projects.ts";
import type { PublishPermission, PublishToken } from "../../credentials/publish_tokens.ts";
import { getRelease } from "../../releases/releases.ts";
import type { PublishEnv } from "./types.ts";

/** Gate of a project route: the project of `:slug`, covered by the token; else 404 or 403. */
export function onProject(permission?: PublishPermission) {
  return createMiddleware<PublishEnv>(async (c, next) => {
    const slug = c.req.param("slug") ?? "";
    const project = isSlug(slug) ? await getProjectBySlug(c.var.store, slug) : null;
    if (project === null) throw new ApiError(404, "project not found");
    const token = c.get("publishToken");
    if (!tokenCovers(token, project)) {
      throw new ApiError(403, `this publish token may not publish to project ${project.slug}`);
    }
    requirePermission(token, permission);
    c.set("project", project);
    await next();
  });
}

/**
 * Gate of a release route: the release of `:id`, of a project the token
 * covers; else 400, 404 or 403. A release of a project outside the token's
 * scope is `404` like a missing one: ids are counted, and a 403 would name
 * every project's slug in turn.
 */
export function onRelease(permission?: PublishPermission) {
  return createMiddleware<PublishEnv>(async (c, next) => {
    const raw = c.req.param("id") ?? "";
    const id = parseIdParam(raw);
    if (id === "invalid") throw new ApiError(400, "invalid release id");
    const release = id === null ? null : await getRelease(c.var.store, id);
    if (release === null) throw new ApiError(404, "release not found");
    const project = await getProject(c.var.store, release.project_id);
    const token = c.get("publishToken");
    if (project === null || !tokenCovers(token, project)) {
      throw new ApiError(404, "release not found");
    }
    requirePermission(token, permission);
    c.set("project", project);
    c.set("release", release);
    await next();
  });
}

/** Refuses a token that lacks `permission` (none: any token the route's project admits). */
function requirePermission(token: PublishToken, permission: PublishPermission | undefined): void {
  if (permission !== undefined && !tokenMay(token, permission)) {
    throw new ApiError(403, `this publish token lacks the permission ${permission}`);
  }
}
