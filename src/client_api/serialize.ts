/** The client API's JSON shapes (../shared/spec/client-api.md "2. Resources and their fields"). */
import { projectJson, releaseJson } from "../http/resource_json.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Release } from "../releases/types.ts";

export { projectJson, releaseJson };

export function releaseEnvelope(project: Project, release: Release) {
  return { project: projectJson(project), release: releaseJson(release) };
}

/**
 * JSON serialized once per record version (a memo keyed by the immutable
 * record, not state: it holds nothing the records do not determine). Records from the store's read
 * cache are the same objects until a write replaces them, so an object
 * identity is a version: a new project or release object means new JSON.
 * Memory follows the records, never the number of keys or requests.
 */
const envelopeBodies = new WeakMap<Release, { project: Project; body: Uint8Array<ArrayBuffer> }>();
const encoder = new TextEncoder();

/** The UTF-8 JSON of `releaseEnvelope(project, release)`. */
export function releaseEnvelopeBody(project: Project, release: Release): Uint8Array<ArrayBuffer> {
  const hit = envelopeBodies.get(release);
  if (hit?.project === project) return hit.body;
  const body = encoder.encode(JSON.stringify(releaseEnvelope(project, release)));
  envelopeBodies.set(release, { project, body });
  return body;
}

const LIST_BODY_BUDGET = 32 * 1024 * 1024;

/**
 * A key's scope as a string, made once per key record: keys with the same
 * scope share one project-list body. (A memo of an immutable record, like
 * `envelopeBodies`: it holds nothing the record does not determine.)
 */
const scopeSignatures = new WeakMap<ApiKey, string>();

function scopeSignature(key: ApiKey): string {
  let signature = scopeSignatures.get(key);
  if (signature === undefined) {
    signature = JSON.stringify([key.scope_mode, key.project_ids, key.tags]);
    scopeSignatures.set(key, signature);
  }
  return signature;
}

/** The UTF-8 JSON of the projects of `projects` that `key` sees (`visible`). */
export type ProjectListBody = (
  key: ApiKey,
  projects: readonly Project[],
  visible: (project: Project) => boolean,
) => Uint8Array<ArrayBuffer>;

/**
 * Project-list bodies by scope, for the current project list only, and no
 * more than `LIST_BODY_BUDGET` bytes in all: beyond that the map starts over,
 * so memory never follows the number of keys. One per client API.
 */
export function createProjectListBodies(): ProjectListBody {
  const listBodies = new Map<
    string,
    { projects: readonly Project[]; body: Uint8Array<ArrayBuffer> }
  >();
  let listBodyBytes = 0;
  return (key, projects, visible) => {
    const signature = scopeSignature(key);
    const hit = listBodies.get(signature);
    if (hit?.projects === projects) return hit.body;
    const body = encoder.encode(
      JSON.stringify({ projects: projects.filter(visible).map(projectJson) }),
    );
    if (hit !== undefined) listBodyBytes -= hit.body.byteLength;
    if (listBodyBytes + body.byteLength > LIST_BODY_BUDGET) {
      listBodies.clear();
      listBodyBytes = 0;
    }
    listBodies.set(signature, { projects, body });
    listBodyBytes += body.byteLength;
    return body;
  };
}

export function apiIndex(serviceName: string) {
  return {
    auth: { header: "Authorization: Bearer <api_key>", type: "bearer" },
    routes: [
      {
        description: "active projects accessible to the key",
        method: "GET",
        path: "/api/v1/projects",
      },
      {
        description: "latest active release metadata of an accessible project",
        method: "GET",
        path: "/api/v1/projects/{projectSlug}/releases/latest",
      },
      {
        description: "release metadata of an accessible release",
        method: "GET",
        path: "/api/v1/releases/{releaseID}",
      },
      {
        description: "private artifact download of an accessible release",
        method: "GET",
        path: "/api/v1/releases/{releaseID}/download",
      },
    ],
    service: serviceName,
    status: "client-api-ready",
    version: "v1",
  };
}
