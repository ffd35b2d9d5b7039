import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";

Deno.test("client flow: latest release, metadata, download", async (t) => {
  const app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop", name: "Desktop" });
  const bytes = new TextEncoder().encode("hello world");
  await seedRelease(app, project.id, "1.0.0", bytes);
  const release = await seedRelease(app, project.id, "1.1.0", bytes, { build: "42" });
  const { secret } = await seedKey(app);

  await t.step("latest release is the newest one", async () => {
    const res = await app.request("/api/v1/projects/desktop/releases/latest", secret);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
    const body = await res.json();
    assert.equal(body.release.id, release.id);
    assert.equal(body.release.build, "42");
    assert.equal(body.project.slug, "desktop");
  });

  await t.step("download returns the bytes with their checksum", async () => {
    const res = await app.request(`/api/v1/releases/${release.id}/download`, secret);
    assert.equal(res.status, 200);
    const got = new Uint8Array(await res.arrayBuffer());
    assert.equal(createHash("sha256").update(got).digest("hex"), release.checksum_sha256);
    assert.equal(res.headers.get("content-disposition"), "attachment; filename=app-1.1.0.bin");
  });

  await app.close();
});
