/** Issue 9 item 9: a download counts when its last byte has been sent, never when cut off. */
import assert from "node:assert/strict";
import { createTestApp, downloadCount, seedKey, seedProject, seedRelease } from "./helpers.ts";

Deno.test("issue 9.9: a download counts once its last byte is sent, a cut-off one never", async (t) => {
  const app = await createTestApp();
  try {
    const project = await seedProject(app, { slug: "app" });
    const release = await seedRelease(app, project.id, "1.0.0", new Uint8Array(2 * 1024 * 1024));
    const { secret } = await seedKey(app);
    const url = `/api/v1/releases/${release.id}/download`;

    await t.step("cut off after the first chunk: not counted", async () => {
      const res = await app.request(url, secret);
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      assert.ok(!(await reader.read()).done);
      await reader.cancel();
      assert.equal(await downloadCount(app.store, release.id), 0);
    });

    await t.step("answered but not yet read: not counted; read to the end: counted", async () => {
      const res = await app.request(url, secret);
      assert.equal(res.status, 200);
      assert.equal(await downloadCount(app.store, release.id), 0);
      assert.equal((await res.arrayBuffer()).byteLength, release.size_bytes);
      assert.equal(await downloadCount(app.store, release.id), 1);
    });

    await t.step("a resumed download counts when its rest has been sent", async () => {
      const rest = await app.request(url, secret, {
        headers: { range: "bytes=1000-", "if-range": `"${release.checksum_sha256}"` },
      });
      assert.equal(rest.status, 206);
      assert.equal(await downloadCount(app.store, release.id), 1);
      await rest.arrayBuffer();
      assert.equal(await downloadCount(app.store, release.id), 2);
    });
  } finally {
    await app.close();
  }
});
