/** The four protected routes: projects, latest release, release metadata, download. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { setProjectState } from "../src/projects/projects.ts";
import { setReleaseState } from "../src/releases/releases.ts";
import { assertError, assertProtectedHeaders, assertSecurityHeaders, readJson } from "./asserts.ts";
import {
  createTestApp,
  seedKey,
  seedProject,
  seedRelease,
  sha256,
  type TestApp,
} from "./helpers.ts";

async function withApp(fn: (t: TestApp, secret: string) => Promise<void>) {
  await using t = await createTestApp();
  const { secret } = await seedKey(t);
  await fn(t, secret);
}

Deno.test("projects: every field of the Project object", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, {
      slug: "desktop",
      name: "Desktop App",
      description: "The desktop client",
      tags: ["win"],
    });
    const res = await t.request("/api/v1/projects", secret);
    assertProtectedHeaders(res);
    assertSecurityHeaders(res);
    assert.deepEqual(await readJson(res, 200), {
      projects: [{
        id: project.id,
        name: "Desktop App",
        slug: "desktop",
        description: "The desktop client",
        latest_release_url: "/api/v1/projects/desktop/releases/latest",
      }],
    });
  }));

Deno.test("projects: description is an empty string when not set", () =>
  withApp(async (t, secret) => {
    await seedProject(t, { slug: "bare" });
    const body = await readJson(await t.request("/api/v1/projects", secret), 200);
    assert.equal(body.projects[0].description, "");
  }));

Deno.test("projects: none accessible gives an empty array with 200", () =>
  withApp(async (t, secret) => {
    assert.deepEqual(await readJson(await t.request("/api/v1/projects", secret), 200), {
      projects: [],
    });
  }));

Deno.test("projects: archived projects are not listed; re-activated they are", () =>
  withApp(async (t, secret) => {
    const a = await seedProject(t, { slug: "a" });
    await seedProject(t, { slug: "b" });
    await setProjectState(t.store, a.id, "archived");
    let body = await readJson(await t.request("/api/v1/projects", secret), 200);
    assert.deepEqual(body.projects.map((p: { slug: string }) => p.slug), ["b"]);
    await setProjectState(t.store, a.id, "active");
    body = await readJson(await t.request("/api/v1/projects", secret), 200);
    assert.deepEqual(body.projects.map((p: { slug: string }) => p.slug), ["a", "b"]);
  }));

Deno.test("latest: the Release envelope with every field", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app", name: "App", description: "d" });
    const bytes = new TextEncoder().encode("release bytes");
    const release = await seedRelease(t, project.id, "2.1.0", bytes, {
      build: "512",
      filename: "app-2.1.0.zip",
      content_type: "application/zip",
      release_notes: "Fixes.\nMore fixes.",
    });
    const res = await t.request("/api/v1/projects/app/releases/latest", secret);
    assertProtectedHeaders(res);
    assertSecurityHeaders(res);
    const body = await readJson(res, 200);
    assert.deepEqual(body, {
      project: {
        id: project.id,
        name: "App",
        slug: "app",
        description: "d",
        latest_release_url: "/api/v1/projects/app/releases/latest",
      },
      release: {
        id: release.id,
        version: "2.1.0",
        build: "512",
        filename: "app-2.1.0.zip",
        checksum_sha256: sha256(bytes),
        size_bytes: bytes.byteLength,
        content_type: "application/zip",
        release_notes: "Fixes.\nMore fixes.",
        created_at: release.created_at,
        metadata_url: `/api/v1/releases/${release.id}`,
        download_url: `/api/v1/releases/${release.id}/download`,
      },
    });
    assert.match(body.release.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/);
    assert.equal(typeof body.release.size_bytes, "number");
    assert.equal(typeof body.release.id, "number");
  }));

Deno.test("latest: build is present only when set; release_notes is always a string", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    await seedRelease(t, project.id, "1.0");
    const body = await readJson(
      await t.request("/api/v1/projects/app/releases/latest", secret),
      200,
    );
    assert.equal("build" in body.release, false);
    assert.equal(body.release.release_notes, "");
    assert.equal(body.release.content_type, "application/octet-stream");
  }));

Deno.test("latest: greatest created_at wins, ties by greater id, through archive and activate", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    const tie = "2024-06-01T00:00:00.000Z";
    const older = await seedRelease(t, project.id, "1.0", undefined, {
      created_at: "2024-01-01T00:00:00Z",
    });
    const tieLow = await seedRelease(t, project.id, "2.0-a", undefined, { created_at: tie });
    const tieHigh = await seedRelease(t, project.id, "2.0-b", undefined, { created_at: tie });
    await seedRelease(t, project.id, "0.9", undefined, { created_at: "2023-01-01T00:00:00Z" });
    const latestVersion = async () => {
      const res = await t.request("/api/v1/projects/app/releases/latest", secret);
      return res.status === 200 ? (await res.json()).release.version : await res.json();
    };
    assert.equal(await latestVersion(), "2.0-b");
    await setReleaseState(t.store, tieHigh.id, "archived");
    assert.equal(await latestVersion(), "2.0-a");
    await setReleaseState(t.store, tieLow.id, "archived");
    assert.equal(await latestVersion(), "1.0");
    await setReleaseState(t.store, tieHigh.id, "active");
    assert.equal(await latestVersion(), "2.0-b");
    await setReleaseState(t.store, older.id, "archived");
    assert.equal(await latestVersion(), "2.0-b");
  }));

Deno.test("latest: 404 resource not found for an unknown, archived or malformed slug", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "gone" });
    await seedRelease(t, project.id, "1.0");
    await setProjectState(t.store, project.id, "archived");
    for (
      const slug of ["nope", "gone", "UPPER", "a%20b", "x".repeat(65), "%E2%9C%93", "%00"]
    ) {
      const res = await t.request(`/api/v1/projects/${slug}/releases/latest`, secret);
      assertProtectedHeaders(res);
      await assertError(res, 404, "resource not found");
    }
  }));

Deno.test("latest: 404 release not found when the project has no active release", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    await assertError(
      await t.request("/api/v1/projects/app/releases/latest", secret),
      404,
      "release not found",
    );
    const only = await seedRelease(t, project.id, "1.0");
    await setReleaseState(t.store, only.id, "archived");
    const res = await t.request("/api/v1/projects/app/releases/latest", secret);
    assertProtectedHeaders(res);
    await assertError(res, 404, "release not found");
  }));

Deno.test("metadata: the Release envelope of an active release", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    const first = await seedRelease(t, project.id, "1.0");
    await seedRelease(t, project.id, "2.0");
    const res = await t.request(`/api/v1/releases/${first.id}`, secret);
    assertProtectedHeaders(res);
    const body = await readJson(res, 200);
    assert.equal(body.project.slug, "app");
    assert.equal(body.release.id, first.id);
    assert.equal(body.release.version, "1.0", "an older release is still readable");
    assert.equal(body.release.metadata_url, `/api/v1/releases/${first.id}`);
  }));

Deno.test("metadata and download: 400 invalid release id when the id is not a number", () =>
  withApp(async (t, secret) => {
    for (
      const id of ["abc", "1.5", "-1", "1e3", "0x10", "%201", "1a", "NaN", "Infinity", "%C2%B2"]
    ) {
      for (const suffix of ["", "/download"]) {
        const res = await t.request(`/api/v1/releases/${id}${suffix}`, secret);
        assertProtectedHeaders(res);
        assertSecurityHeaders(res);
        await assertError(res, 400, "invalid release id");
      }
    }
  }));

Deno.test("metadata and download: 404 resource not found", async (t) => {
  await withApp(async (app, secret) => {
    const live = await seedProject(app, { slug: "live" });
    const archivedProject = await seedProject(app, { slug: "old" });
    const inArchivedProject = await seedRelease(app, archivedProject.id, "1.0");
    await setProjectState(app.store, archivedProject.id, "archived");
    const archived = await seedRelease(app, live.id, "0.1");
    await setReleaseState(app.store, archived.id, "archived");
    const cases: [string, string][] = [
      ["a release that never existed", "999"],
      ["id 0", "0"],
      ["an id beyond any integer", "99999999999999999999999"],
      ["an archived release", String(archived.id)],
      ["a release of an archived project", String(inArchivedProject.id)],
    ];
    for (const [name, id] of cases) {
      await t.step(name, async () => {
        for (const suffix of ["", "/download"]) {
          const res = await app.request(`/api/v1/releases/${id}${suffix}`, secret);
          assertProtectedHeaders(res);
          await assertError(res, 404, "resource not found");
        }
      });
    }
  });
});

Deno.test("archived project hides its releases; re-activated they come back", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    const release = await seedRelease(t, project.id, "1.0");
    await setProjectState(t.store, project.id, "archived");
    for (
      const path of [
        "/api/v1/projects/app/releases/latest",
        `/api/v1/releases/${release.id}`,
        `/api/v1/releases/${release.id}/download`,
      ]
    ) {
      await assertError(await t.request(path, secret), 404, "resource not found");
    }
    await setProjectState(t.store, project.id, "active");
    const body = await readJson(await t.request(`/api/v1/releases/${release.id}`, secret), 200);
    assert.equal(body.release.id, release.id);
  }));

Deno.test("download: 200 with the artifact bytes and the spec's headers", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    const bytes = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 251);
    const release = await seedRelease(t, project.id, "1.0", bytes, {
      filename: "app-1.0.tar.gz",
      content_type: "application/gzip",
    });
    const res = await t.request(`/api/v1/releases/${release.id}/download`, secret);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-disposition"), "attachment; filename=app-1.0.tar.gz");
    assert.equal(res.headers.get("content-type"), "application/gzip");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.equal(res.headers.get("content-length"), String(bytes.byteLength));
    assertProtectedHeaders(res);
    assertSecurityHeaders(res);
    const got = new Uint8Array(await res.arrayBuffer());
    assert.equal(got.byteLength, release.size_bytes);
    assert.equal(sha256(got), release.checksum_sha256);
    assert.deepEqual(got, bytes);
  }));

Deno.test("download: HEAD gives the headers without a body", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    const release = await seedRelease(t, project.id, "1.0", new Uint8Array(1234));
    const res = await t.request(`/api/v1/releases/${release.id}/download`, secret, {
      method: "HEAD",
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-length"), "1234");
    assert.match(res.headers.get("content-disposition") ?? "", /^attachment; /);
    assert.equal(await res.text(), "");
  }));

Deno.test("download: 404 release not found when the artifact file is missing", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    const release = await seedRelease(t, project.id, "1.0");
    await Deno.remove(join(t.config.artifactsDir, release.storage_key));
    const res = await t.request(`/api/v1/releases/${release.id}/download`, secret);
    assertProtectedHeaders(res);
    assertSecurityHeaders(res);
    await assertError(res, 404, "release not found");
    // The metadata is still served: only the file is gone.
    await readJson(await t.request(`/api/v1/releases/${release.id}`, secret), 200);
  }));

Deno.test("download: streams a large artifact without buffering it whole", () =>
  withApp(async (t, secret) => {
    const project = await seedProject(t, { slug: "app" });
    const chunk = new Uint8Array(1024 * 1024).fill(1);
    const release = await seedRelease(t, project.id, "1.0", chunk);
    const res = await t.request(`/api/v1/releases/${release.id}/download`, secret);
    assert.ok(res.body);
    const reader = res.body.getReader();
    const first = await reader.read();
    assert.ok(!first.done && first.value.byteLength < chunk.byteLength, "arrives in pieces");
    await reader.cancel();
  }));

Deno.test({
  name: "download: HEAD leaves no artifact file open",
  ignore: Deno.build.os !== "linux",
  fn: () =>
    withApp(async (t, secret) => {
      const project = await seedProject(t, { slug: "app" });
      const release = await seedRelease(t, project.id, "1.0");
      // Counted by `ls`: the test task may not read /proc itself.
      const openFiles = async () => {
        const { stdout } = await new Deno.Command("ls", { args: [`/proc/${Deno.pid}/fd`] })
          .output();
        return new TextDecoder().decode(stdout).trim().split("\n").length;
      };
      const before = await openFiles();
      for (let i = 0; i < 20; i++) {
        const res = await t.request(`/api/v1/releases/${release.id}/download`, secret, {
          method: "HEAD",
        });
        assert.equal(res.status, 200);
        await res.text();
      }
      const leaked = (await openFiles()) - before;
      assert.ok(leaked < 5, `${leaked} descriptors leaked`);
    }),
});
