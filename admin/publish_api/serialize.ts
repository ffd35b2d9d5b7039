/**
 * The publishing API's JSON shapes: a release in the client API's release
 * shape (../shared/spec/client-api.md "Release object", built the same
 * way as src/api/serialize.ts; tests/publish_api_test.ts compares the two),
 * plus its `state` and whether it `is_latest`, and the project it belongs to.
 */
import { downloadContentType } from "../../src/http/content_disposition.ts";
import type { Project, PublishToken, Release } from "../../src/store/mod.ts";

export function publishedRelease(release: Release, latestId: number | null) {
  return {
    id: release.id,
    version: release.version,
    ...(release.build ? { build: release.build } : {}),
    filename: release.filename,
    checksum_sha256: release.checksum_sha256,
    size_bytes: release.size_bytes,
    content_type: downloadContentType(release.content_type),
    release_notes: release.release_notes,
    created_at: release.created_at,
    metadata_url: `/api/v1/releases/${release.id}`,
    download_url: `/api/v1/releases/${release.id}/download`,
    state: release.state,
    is_latest: release.id === latestId,
  };
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
