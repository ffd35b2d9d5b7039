import assert from "node:assert/strict";
import { listAuditEntries } from "../src/kv/audit.ts";
import { getProjectBySlug, listProjects } from "../src/projects/projects.ts";
import { seedProject, seedRelease } from "./helpers.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";

Deno.test("admin projects", async (t) => {
  await using app = await createAdminTestApp();
  const client = await signedInClient(app);

  await t.step("list page shows the create form with its fields", async () => {
    const { res, html } = await client.page("/admin/projects");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
    for (const name of ["name", "slug", "description", "tags", "csrf_token"]) {
      assert.match(html, new RegExp(`name="${name}"`), name);
    }
  });

  await t.step(
    "create: 303 to the project page; tags trimmed, lowercased, deduplicated",
    async () => {
      const sent = {
        name: "Desktop App",
        slug: "desktop",
        description: "The desktop client",
        tags: " Stable, desktop ,, STABLE,beta ",
      };
      const res = await client.post("/admin/projects", sent);
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), `/admin/projects/${sent.slug}`);
      const project = await getProjectBySlug(app.store, sent.slug);
      assert.equal(project?.name, sent.name);
      assert.equal(project?.description, sent.description);
      assert.deepEqual(project?.tags, ["stable", "desktop", "beta"]);
      const page = await client.page("/admin/projects/desktop/settings");
      assert.match(
        page.html,
        /Project &quot;Desktop App&quot; was created|Project "Desktop App" was created/,
      );
    },
  );

  await t.step("an empty slug is derived from the name", async () => {
    const res = await client.post("/admin/projects", { name: "My Mobile App 2", slug: "" });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/projects/my-mobile-app-2");
  });

  for (
    const [label, fields, message] of [
      ["taken slug", { name: "Other", slug: "desktop" }, /already taken/],
      ["bad slug", { name: "Other", slug: "Bad Slug!" }, /Slug must be/],
      ["long slug", { name: "Other", slug: "a".repeat(65) }, /Slug must be/],
      ["missing name", { name: "  ", slug: "fine" }, /Name is required/],
      ["name that gives no slug", { name: "!!!", slug: "" }, /Slug must be/],
    ] as const
  ) {
    await t.step(`${label}: 400, form with message and values, nothing stored`, async () => {
      const before = (await listProjects(app.store)).length;
      const res = await client.post("/admin/projects", {
        description: "kept <description>",
        tags: "kept-tag",
        ...fields,
      });
      assert.equal(res.status, 400);
      const html = await res.text();
      assert.match(html, message);
      assert.match(html, /data-form-error/);
      assert.match(html, /kept &lt;description&gt;/);
      assert.match(html, /value="kept-tag"/);
      assert.equal((await listProjects(app.store)).length, before);
    });
  }

  await t.step("list shows active and archived projects with tags and latest version", async () => {
    const project = await getProjectBySlug(app.store, "desktop");
    await seedRelease(app, project!.id, "1.0.0");
    await seedRelease(app, project!.id, "1.1.0");
    await seedProject(app, { slug: "old", name: "Old One", tags: ["legacy"] });
    await client.post("/admin/projects/old/archive");
    const { html } = await client.page("/admin/projects");
    assert.match(html, /data-project-slug="desktop"/);
    assert.match(html, /data-project-slug="old"/);
    const desktopRow = html.split('data-project-slug="desktop"')[1].split("</tr>")[0];
    assert.match(desktopRow, /1\.1\.0/);
    assert.match(desktopRow, /stable/);
    const oldRow = html.split('data-project-slug="old"')[1].split("</tr>")[0];
    assert.match(oldRow, /archived/);
    assert.match(oldRow, /legacy/);
  });

  await t.step("project page: edit form, upload form", async () => {
    const { res, html } = await client.page("/admin/projects/desktop");
    assert.equal(res.status, 200);
    assert.match(html, /action="\/admin\/projects\/desktop"/);
    assert.match(html, /action="\/admin\/projects\/desktop\/releases"/);
    assert.match(html, /enctype="multipart\/form-data"/);
    for (const name of ["version", "build", "release_notes", "file"]) {
      assert.match(html, new RegExp(`name="${name}"`), name);
    }
  });

  await t.step("edit: 303; name, description, tags change; the slug never does", async () => {
    const sent = { name: "Desktop Suite", description: "new text", tags: "Win, mac" };
    const res = await client.post("/admin/projects/desktop", { ...sent, slug: "hijack" });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/projects/desktop");
    const project = await getProjectBySlug(app.store, "desktop");
    assert.equal(project?.name, sent.name);
    assert.equal(project?.description, sent.description);
    assert.deepEqual(project?.tags, ["win", "mac"]);
    assert.equal(await getProjectBySlug(app.store, "hijack"), null);
  });

  await t.step("edit with an empty name: 400 with the values, nothing stored", async () => {
    const res = await client.post("/admin/projects/desktop", {
      name: "",
      description: "unsaved text",
      tags: "zzz",
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /Name is required/);
    assert.match(html, /unsaved text/);
    assert.match(html, /value="zzz"/);
    assert.equal((await getProjectBySlug(app.store, "desktop"))?.name, "Desktop Suite");
  });

  await t.step("archive and re-activate: 303, state changes", async () => {
    const archived = await client.post("/admin/projects/desktop/archive");
    assert.equal(archived.status, 303);
    assert.equal(archived.headers.get("location"), "/admin/projects/desktop");
    assert.equal((await getProjectBySlug(app.store, "desktop"))?.state, "archived");
    const page = await client.page("/admin/projects/desktop/settings");
    assert.match(page.html, /action="\/admin\/projects\/desktop\/activate"/);
    const active = await client.post("/admin/projects/desktop/activate");
    assert.equal(active.status, 303);
    assert.equal((await getProjectBySlug(app.store, "desktop"))?.state, "active");
  });

  await t.step("unknown projects are a 404 page", async () => {
    for (const path of ["/admin/projects/nope", "/admin/projects/Not%20A%20Slug"]) {
      const res = await client.fetch(path);
      assert.equal(res.status, 404, path);
      assert.match(res.headers.get("content-type")!, /^text\/html/);
    }
    const post = await client.post("/admin/projects/nope/archive");
    assert.equal(post.status, 404);
  });

  await t.step("project changes are audited with who and what", async () => {
    const { entries } = await listAuditEntries(app.store, { limit: 100 });
    const actions = entries.map((entry) => `${entry.action} ${entry.target}`);
    for (
      const expected of [
        "project.create project desktop",
        "project.update project desktop",
        "project.archive project desktop",
        "project.activate project desktop",
      ]
    ) {
      assert.ok(actions.includes(expected), expected);
    }
    assert.ok(entries.every((entry) => entry.actor !== ""));
    // Newest first.
    const times = entries.map((entry) => entry.at);
    assert.deepEqual(times, [...times].sort().reverse());
  });
});
