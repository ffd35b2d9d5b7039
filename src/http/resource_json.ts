/**
 * The client API's project and release objects (../shared/spec/client-api.md
 * "2. Resources and their fields"): one definition for the client API
 * (src/client_api/serialize.ts) and the publishing API (src/publishing/api/), which
 * answers releases in the same shape.
 */
import { downloadContentType } from "./content_disposition.ts";
import type { Project } from "../projects/types.ts";
import type { Release } from "../releases/types.ts";

export function projectJson(project: Project) {
  return {
    id: project.id,
    name: project.name,
    slug: project.slug,
    description: project.description,
    latest_release_url: `/api/v1/projects/${project.slug}/releases/latest`,
  };
}

export function releaseJson(release: Release) {
  return {
    id: release.id,
    version: release.version,
    // "present if set"
    ...(release.build ? { build: release.build } : {}),
    filename: release.filename,
    checksum_sha256: release.checksum_sha256,
    size_bytes: release.size_bytes,
    // The type the download answers with (a record stored before uploads were checked may differ).
    content_type: downloadContentType(release.content_type),
    release_notes: release.release_notes,
    created_at: release.created_at,
    metadata_url: `/api/v1/releases/${release.id}`,
    download_url: `/api/v1/releases/${release.id}/download`,
  };
}
