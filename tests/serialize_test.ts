/** The client API's precomputed bodies: shared by scope, renewed with the records. */
import assert from "node:assert/strict";
import { projectVisible } from "../src/store/access.ts";
import { projectListBody, releaseEnvelopeBody } from "../src/api/serialize.ts";
import type { ApiKey, Project, Release } from "../src/store/mod.ts";

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

const list = (k: ApiKey, projects: readonly Project[]) =>
  projectListBody(k, projects, (p) => projectVisible(k, p));
const decode = (body: Uint8Array) => JSON.parse(new TextDecoder().decode(body));

Deno.test("project list bodies: one per scope, not per key, and renewed with the list", () => {
  const projects = [project(1), project(2, ["beta"]), project(3)];
  const a = key(1, { project_ids: [1, 3] });
  const b = key(2, { project_ids: [1, 3] });
  const other = key(3, { scope_mode: "tag_allow_list", tags: ["beta"] });
  const body = list(a, projects);
  assert.deepEqual(decode(body).projects.map((p: Project) => p.id), [1, 3]);
  assert.equal(list(b, projects), body, "the same scope shares the body");
  assert.deepEqual(decode(list(other, projects)).projects.map((p: Project) => p.slug), ["p2"]);

  const renamed = [{ ...projects[0], name: "Renamed" }, projects[1], projects[2]];
  const fresh = list(a, renamed);
  assert.notEqual(fresh, body, "a new list (after a write) gets a new body");
  assert.equal(decode(fresh).projects[0].name, "Renamed");
});

Deno.test("release envelope bodies: kept per release and project version", () => {
  const p = project(1);
  const release = { id: 7, project_id: 1, version: "1.0.0", state: "active" } as Release;
  const body = releaseEnvelopeBody(p, release);
  assert.equal(releaseEnvelopeBody(p, release), body);
  const renamed = { ...p, name: "Renamed" };
  assert.equal(decode(releaseEnvelopeBody(renamed, release)).project.name, "Renamed");
});
