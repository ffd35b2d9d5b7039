/** The client API's precomputed bodies: always what the records and the key's scope say. */
import assert from "node:assert/strict";
import { projectVisible } from "../src/credentials/access.ts";
import {
  createProjectListBodies,
  projectJson,
  releaseEnvelope,
  releaseEnvelopeBody,
} from "../src/client_api/serialize.ts";
import type { Project } from "../src/projects/types.ts";
import type { ApiKey } from "../src/credentials/types.ts";
import type { Release } from "../src/releases/types.ts";

const project = (id: number, tags: string[] = []): Project => ({
  id,
  name: `P${id}`,
  slug: `p${id}`,
  description: "",
  tags,
  state: "active",
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
});

const key = (id: number, scope: Partial<ApiKey>): ApiKey => ({
  id,
  name: `k${id}`,
  hash: `h${id}`,
  prefix: "uds_xxxxxx",
  active: true,
  expires_at: null,
  can_download: true,
  scope_mode: "project_allow_list",
  project_ids: [],
  tags: [],
  created_at: "2026-01-01T00:00:00.000Z",
  ...scope,
});

const projectListBody = createProjectListBodies();
const list = (k: ApiKey, projects: readonly Project[]) =>
  projectListBody(k, projects, (p) => projectVisible(k, p));
const decode = (body: Uint8Array) => JSON.parse(new TextDecoder().decode(body));
/** What the list body must say for `k`, worked out without the body cache. */
const expectedList = (k: ApiKey, projects: readonly Project[]) => ({
  projects: projects.filter((p) => projectVisible(k, p)).map(projectJson),
});

Deno.test("project list bodies: each key gets exactly its scope's projects, also after writes", () => {
  const keys = [
    key(1, { project_ids: [1, 3] }),
    key(2, { project_ids: [1, 3] }),
    key(3, { project_ids: [2] }),
    key(4, { scope_mode: "project_deny_list", project_ids: [1, 3] }),
    key(5, { scope_mode: "tag_allow_list", tags: ["beta"] }),
    key(6, { scope_mode: "tag_deny_list", tags: ["beta"] }),
    key(7, { scope_mode: "all_projects" }),
  ];
  let projects: readonly Project[] = [project(1), project(2, ["beta"]), project(3)];
  const versions: Array<(current: readonly Project[]) => Project[]> = [
    (current) => [...current],
    (current) => [{ ...current[0], name: "Renamed" }, ...current.slice(1)],
    (current) => [...current, project(4, ["beta"])],
    (current) => [current[0], { ...current[1], tags: [] }, ...current.slice(2)],
    (current) => current.slice(1),
  ];
  for (const [round, next] of versions.entries()) {
    projects = next(projects);
    // Ask twice in two orders: an answer for one key must never leak to another.
    for (const k of [...keys, ...keys.toReversed()]) {
      assert.deepEqual(
        decode(list(k, projects)),
        expectedList(k, projects),
        `round ${round}, key ${k.id}`,
      );
    }
  }
});

Deno.test("project list bodies: a key whose scope changed gets its new scope", () => {
  const projects = [project(1), project(2)];
  const before = key(1, { project_ids: [1] });
  assert.deepEqual(decode(list(before, projects)).projects.map((p: Project) => p.id), [1]);
  const after = { ...before, project_ids: [2] };
  assert.deepEqual(decode(list(after, projects)).projects.map((p: Project) => p.id), [2]);
});

Deno.test("release envelope bodies follow the project and the release", () => {
  const p = project(1);
  const release: Release = {
    id: 7,
    project_id: 1,
    version: "1.0.0",
    build: "",
    release_notes: "",
    filename: "a.bin",
    content_type: "application/octet-stream",
    storage_key: "k",
    checksum_sha256: "0".repeat(64),
    size_bytes: 1,
    created_at: "2026-01-01T00:00:00.000Z",
    state: "active",
  };
  const check = (pr: Project, r: Release) =>
    assert.deepEqual(decode(releaseEnvelopeBody(pr, r)), releaseEnvelope(pr, r));
  check(p, release);
  check(p, release);
  const renamed = { ...p, name: "Renamed" };
  check(renamed, release);
  assert.equal(decode(releaseEnvelopeBody(renamed, release)).project.name, "Renamed");
  const rebuilt = { ...release, version: "1.0.1", build: "2" };
  check(renamed, rebuilt);
  assert.equal(decode(releaseEnvelopeBody(renamed, rebuilt)).release.version, "1.0.1");
  check(p, release);
});
