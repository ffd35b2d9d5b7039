/**
 * The publishing API's JSON shapes: a release in the client API's release
 * shape (src/http/resource_json.ts, shared with the client API),
 * plus its `state` and whether it `is_latest`, and the project it belongs to.
 */
import { releaseJson } from "../../http/resource_json.ts";
import type { PublishToken } from "../../credentials/publish_tokens.ts";
import type { Project } from "../../projects/types.ts";
import type { Release } from "../../releases/types.ts";

export function publishedRelease(release: Release, latestId: number | null) {
  return { ...releaseJson(release), state: release.state, is_latest: release.id === latestId };
}

export function publishedProject(project: Project) {
  return {
    id: project.id,
    name: project.name,
    slug: project.slug,
    state: project.state,
  };
}

export function tokenJson(token: PublishToken, slugs: readonly string[]) {
  return {
    id: token.id,
    name: token.name,
    prefix: token.prefix,
    expires_at: token.expires_at,
    all_projects: token.all_projects,
    project_slugs: slugs,
    permissions: token.permissions,
  };
}
