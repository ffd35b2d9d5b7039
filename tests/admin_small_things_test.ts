/**
 * Issue 18 item 6 in process: the dashboard's "Upload a release" opens an
 * upload form (with a project field) that uploads; the project list's
 * "Updated" moves on upload; the key form explains its choices.
 */
import assert from "node:assert/strict";
import { listArtifactFiles, signedInClient } from "./admin_helpers.ts";
import { createAdminTestApp } from "./admin_helpers.ts";
import { seedProject, seedRelease } from "./helpers.ts";
import { listReleasesByProject } from "../src/releases/releases.ts";

Deno.test("Upload a release from the dashboard", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);

  await t.step("without a project it says to create one first", async () => {
    const { html } = await client.page("/admin");
    assert.match(html, /href="\/admin\/upload"[^>]*>Upload a release</);
    const page = await client.page("/admin/upload");
    assert.equal(page.res.status, 200);
    assert.match(page.html, /data-no-projects/);
  });

  const project = await seedProject(app, { slug: "app", name: "App" });
  await seedProject(app, { slug: "other", name: "Other" });

  await t.step("the link opens an upload form with a project field", async () => {
    const { html } = await client.page("/admin/upload");
    assert.match(html, /<form[^>]*action="\/admin\/upload"[^>]*enctype="multipart\/form-data"/);
    assert.match(html, /<select[^>]*name="project"/);
    assert.match(html, /<option value="app"[^>]*>App \(app\)/);
    assert.match(html, /name="version"/);
    assert.match(html, /type="file"/);
  });

  await t.step("no project chosen: 400, the form again, nothing stored", async () => {
    const res = await client.upload("/admin/upload", [
      ["csrf_token", client.csrfToken],
      ["version", "1.0"],
      ["file", new File(["bytes"], "a.bin")],
    ]);
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /Choose the project the release belongs to/);
    assert.match(html, /name="version"[^>]*value="1.0"/);
    assert.deepEqual(await listArtifactFiles(app), []);
  });

  await t.step("uploads to the chosen project (project after the file too)", async () => {
    const res = await client.upload("/admin/upload", [
      ["csrf_token", client.csrfToken],
      ["version", "1.0"],
      ["file", new File(["bytes"], "a.bin")],
      ["project", "app"],
    ]);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/projects/app");
    const releases = await listReleasesByProject(app.store, project.id);
    assert.deepEqual(releases.map((r) => r.version), ["1.0"]);
    assert.equal((await listArtifactFiles(app)).length, 1);
  });

  await t.step("?project= preselects it", async () => {
    const { html } = await client.page("/admin/upload?project=other");
    assert.match(html, /<option value="other" selected/);
  });
});

Deno.test("the project list's Updated moves on upload", async () => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);
  const project = await seedProject(app, { slug: "app" });
  const updatedOf = async () => {
    const { html } = await client.page("/admin/projects");
    const row = /data-project-slug="app"[\s\S]*?data-label="Updated">\s*<time datetime="([^"]+)"/
      .exec(html);
    assert.ok(row, "the row shows when it was updated");
    return row[1];
  };
  assert.equal(await updatedOf(), project.updated_at);
  await new Promise((resolve) => setTimeout(resolve, 5));
  const release = await seedRelease(app, project.id, "1.0");
  assert.equal(await updatedOf(), release.created_at);
  assert.ok(release.created_at > project.updated_at);
});
