/**
 * What the admin pages say, checked in process: release notes keep `\n`
 * line breaks whichever way they come in.
 */
import assert from "node:assert/strict";
import { getRelease } from "../src/store/mod.ts";
import { seedKey, seedProject } from "./helpers.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

Deno.test("release notes are stored with \\n line breaks, however they are sent", async (t) => {
  await using app = await createAdminTestApp();
  await seedProject(app, { slug: "app" });
  const client = await signedInClient(app);
  const { secret: key } = await seedKey(app);
  const { secret: token } = await seedPublishToken(app.kv);
  const notesOf = async (id: number) => (await getRelease(app.kv, id))!.release_notes;
  const latestId = async () =>
    (await (await app.request("/api/v1/projects/app/releases/latest", key)).json()).release.id;

  await t.step("typed in the upload form (\\r\\n): \\n in the API", async () => {
    const res = await client.upload("/admin/projects/app/releases", [
      ["csrf_token", client.csrfToken],
      ["version", "1.0.0"],
      ["release_notes", "Fixes:\r\n- a\r\n- b\rc"],
      ["file", new File(["bytes"], "app.bin")],
    ]);
    assert.equal(res.status, 303);
    const id = await latestId();
    assert.equal(await notesOf(id), "Fixes:\n- a\n- b\nc");
    const answer = await (await app.request(`/api/v1/releases/${id}`, key)).json();
    assert.equal(answer.release.release_notes, "Fixes:\n- a\n- b\nc");
  });

  await t.step("edited in the release form: \\n", async () => {
    const id = await latestId();
    const res = await client.post(`/admin/releases/${id}`, {
      version: "1.0.0",
      build: "",
      release_notes: "One\r\nTwo",
    });
    assert.equal(res.status, 303);
    assert.equal(await notesOf(id), "One\nTwo");
  });

  await t.step("through the publishing API, upload and edit: \\n", async () => {
    const res = await app.request(`${PUBLISH_PREFIX}/projects/app/releases`, token, {
      method: "POST",
      body: uploadForm({ version: "2.0.0", release_notes: "A\r\nB" }, {
        bytes: new Uint8Array([1]),
      }),
    });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    assert.equal(body.release.release_notes, "A\nB");
    const patched = await app.request(`${PUBLISH_PREFIX}/releases/${body.release.id}`, token, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ release_notes: "C\r\nD" }),
    });
    assert.equal(patched.status, 200, await patched.clone().text());
    assert.equal((await patched.json()).release.release_notes, "C\nD");
    assert.equal(await notesOf(body.release.id), "C\nD");
  });
});
