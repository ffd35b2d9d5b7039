/** Store layer: projects, their integer ids and the slug index. */
import assert from "node:assert/strict";
import { NotFoundError, ValidationError } from "../src/kv/errors.ts";
import { counterKey, projectBySlugKey } from "../src/kv/keys.ts";
import {
  createProject,
  getProject,
  getProjectBySlug,
  getProjectIdsBySlugs,
  listProjects,
  setProjectState,
  updateProject,
} from "../src/projects/projects.ts";
import { dumpKv, withKv, withStore } from "./helpers.ts";

Deno.test("project ids are integers from a KV counter, starting at 1", () =>
  withKv(async (kv, store) => {
    const a = await createProject(store, { name: "A", slug: "a" });
    const b = await createProject(store, { name: "B", slug: "b" });
    assert.equal(a.id, 1);
    assert.equal(b.id, 2);
    // The counter is ahead by the block of ids this process claimed (issue 19.1).
    assert.ok(((await kv.get<number>(counterKey("projects"))).value ?? 0) >= 2);
  }));

Deno.test("concurrent project creation hands out distinct ids", () =>
  withStore(async (store) => {
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) => createProject(store, { name: `P${i}`, slug: `p-${i}` })),
    );
    const ids = created.map((p) => p.id).sort((x, y) => x - y);
    assert.deepEqual(ids, Array.from({ length: 12 }, (_, i) => i + 1));
  }));

Deno.test("the slug index is written in the same commit as the project", () =>
  withKv(async (kv, store) => {
    const project = await createProject(store, { name: "Desktop App", slug: "desktop" });
    assert.equal((await kv.get(projectBySlugKey("desktop"))).value, project.id);
    assert.deepEqual(await getProjectBySlug(store, "desktop"), project);
    assert.equal(await getProjectBySlug(store, "unknown"), null);
  }));

Deno.test("a new project is active, with trimmed fields and normalized tags", () =>
  withStore(async (store) => {
    const project = await createProject(store, {
      name: "  Desktop  ",
      slug: "desktop",
      description: " The app ",
      tags: [" Beta ", "beta", "", "Windows"],
    });
    assert.equal(project.state, "active");
    assert.equal(project.name, "Desktop");
    assert.equal(project.description, "The app");
    assert.deepEqual(project.tags, ["beta", "windows"]);
    assert.deepEqual(await getProject(store, project.id), project);
  }));

Deno.test("an empty slug is derived from the name", () =>
  withStore(async (store) => {
    const project = await createProject(store, { name: "Mÿ Äpp 2 — Pro!", slug: "" });
    assert.equal(project.slug, "my-app-2-pro");
  }));

Deno.test("a slug must be 1-64 lowercase letters, digits and -", () =>
  withKv(async (kv, store) => {
    for (const slug of ["Upper", "with space", "a/b", "x".repeat(65), "ünï"]) {
      await assert.rejects(
        createProject(store, { name: "n", slug }),
        (e) => e instanceof ValidationError && e.field === "slug",
        slug,
      );
    }
    assert.deepEqual(await dumpKv(kv), [], "nothing stored");
  }));

Deno.test("a taken slug is refused, archived projects included, and nothing is stored", () =>
  withKv(async (kv, store) => {
    const first = await createProject(store, { name: "A", slug: "app" });
    await setProjectState(store, first.id, "archived");
    const before = await dumpKv(kv);
    await assert.rejects(
      createProject(store, { name: "B", slug: "app" }),
      (e) => e instanceof ValidationError && e.field === "slug",
    );
    assert.deepEqual(await dumpKv(kv), before);
  }));

Deno.test("concurrent creation of one slug lets exactly one win", () =>
  withKv(async (kv, store) => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => createProject(store, { name: `N${i}`, slug: "same" })),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    assert.equal((await listProjects(store)).length, 1);
    // Ids come from this process's block: the counter is never behind one handed out.
    const [winner] = await listProjects(store);
    assert.ok(((await kv.get<number>(counterKey("projects"))).value ?? 0) >= winner.id);
  }));

Deno.test("editing a project changes name, description and tags but never the slug", () =>
  withStore(async (store) => {
    const project = await createProject(store, { name: "A", slug: "app", tags: ["x"] });
    const edited = await updateProject(store, project.id, {
      name: "Renamed",
      description: "new",
      tags: ["Y"],
    });
    assert.equal(edited.slug, "app");
    assert.equal(edited.name, "Renamed");
    assert.deepEqual(edited.tags, ["y"]);
    assert.equal((await getProjectBySlug(store, "app"))?.name, "Renamed");
    await assert.rejects(updateProject(store, 99, { name: "x" }), NotFoundError);
  }));

Deno.test("archiving and re-activating a project flips its state", () =>
  withStore(async (store) => {
    const project = await createProject(store, { name: "A", slug: "app" });
    assert.equal((await setProjectState(store, project.id, "archived")).state, "archived");
    assert.equal((await getProject(store, project.id))?.state, "archived");
    assert.equal((await setProjectState(store, project.id, "active")).state, "active");
    await assert.rejects(setProjectState(store, 42, "archived"), NotFoundError);
  }));

Deno.test("listProjects returns every project in id order, archived included", () =>
  withStore(async (store) => {
    for (let i = 1; i <= 11; i++) await createProject(store, { name: `P${i}`, slug: `p${i}` });
    await setProjectState(store, 3, "archived");
    const projects = await listProjects(store);
    assert.deepEqual(projects.map((p) => p.id), Array.from({ length: 11 }, (_, i) => i + 1));
    assert.equal(projects[2].state, "archived");
  }));

Deno.test("slugs resolve to ids in bulk; an unknown slug is invalid input", () =>
  withStore(async (store) => {
    for (let i = 1; i <= 12; i++) await createProject(store, { name: `P${i}`, slug: `p${i}` });
    const slugs = Array.from({ length: 12 }, (_, i) => `p${12 - i}`);
    assert.deepEqual(
      await getProjectIdsBySlugs(store, slugs),
      Array.from({ length: 12 }, (_, i) => 12 - i),
    );
    await assert.rejects(
      getProjectIdsBySlugs(store, ["p1", "nope"]),
      (e) => e instanceof ValidationError && e.field === "project_slugs" && /nope/.test(e.message),
    );
  }));
