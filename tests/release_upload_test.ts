/**
 * One rule of a release from an upload (src/publishing/release_upload.ts):
 * the admin forms and the publishing API refuse the same fields for the same
 * reason, and the rule reads the media type from where the upload named it.
 */
import assert from "node:assert/strict";
import { releaseFromUpload } from "../src/publishing/release_upload.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { listReleasesByProject } from "../src/releases/releases.ts";
import type { ReceivedFile } from "../src/storage/mod.ts";
import { seedProject } from "./helpers.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

Deno.test("one release-from-upload rule for the admin forms and the publishing API", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  const { secret } = await seedPublishToken(app.store);
  const admin = await signedInClient(app);
  await admin.page("/admin/projects/app");
  const bad: Array<{ fields: Record<string, string>; says: RegExp }> = [
    { fields: { version: "" }, says: /version/ },
    { fields: { version: "1.0.0", build: "b".repeat(10_000) }, says: /build/ },
  ];

  await t.step("the same fields are refused by every surface, nothing stored", async () => {
    for (const { fields, says } of bad) {
      const label = JSON.stringify(fields).slice(0, 60);
      const api = await app.request(`${PUBLISH_PREFIX}/projects/app/releases`, secret, {
        method: "POST",
        body: uploadForm(fields, { bytes: new Uint8Array([1, 2, 3]) }),
      });
      assert.equal(api.status, 400, label);
      assert.match((await api.json()).error, says, label);
      for (const path of ["/admin/projects/app/releases", "/admin/upload"]) {
        const form = await admin.upload(path, [
          ["csrf_token", admin.csrfToken],
          ...(path === "/admin/upload" ? [["project", "app"] as [string, string]] : []),
          ...Object.entries(fields),
          ["file", new File([new Uint8Array([1, 2, 3])], "app.bin")],
        ]);
        assert.equal(form.status, 400, `${path} ${label}`);
        assert.match(await form.text(), says, `${path} ${label}`);
      }
    }
    assert.deepEqual(await listReleasesByProject(app.store, project.id), []);
  });

  await t.step("a yes/no field of the API is true or false; anything else is refused", async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ draft: "maybe" }, /draft must be true or false/],
      [{ not_latest: "2" }, /not_latest must be true or false/],
    ];
    for (const [fields, says] of cases) {
      const api = await app.request(`${PUBLISH_PREFIX}/projects/app/releases`, secret, {
        method: "POST",
        body: uploadForm({ version: "1.0.0", ...fields }, { bytes: new Uint8Array([1]) }),
      });
      assert.equal(api.status, 400, JSON.stringify(fields));
      assert.match((await api.json()).error, says);
    }
    assert.deepEqual(await listReleasesByProject(app.store, project.id), []);
  });

  await t.step("a form's checkbox is on when sent with any value but empty", async () => {
    for (const [index, value] of ["on", "maybe", "false"].entries()) {
      const res = await admin.upload("/admin/projects/app/releases", [
        ["csrf_token", admin.csrfToken],
        ["version", `1.0.${index}`],
        ["draft", value],
        ["file", new File([new Uint8Array([1])], "app.bin")],
      ]);
      assert.equal(res.status, 303, await res.text());
    }
    const releases = await listReleasesByProject(app.store, project.id);
    assert.deepEqual(releases.map((release) => release.state), ["draft", "draft", "draft"]);
  });

  await t.step("the media type comes from the content_type field, else the file part", () => {
    const file: ReceivedFile = {
      stored: {
        storage_key: "k",
        size_bytes: 1,
        checksum_sha256: "0".repeat(64),
      } as ReceivedFile["stored"],
      filename: "app.bin",
      contentType: "text/plain",
    };
    const named = releaseFromUpload(1, {
      values: { version: "1.0.0", content_type: "application/zip" },
      file,
    });
    assert.equal(named.release.content_type, "application/zip");
    assert.equal(
      releaseFromUpload(1, { values: { version: "1.0.0" }, file }).release.content_type,
      "text/plain",
    );
    const cases: Array<[Record<string, string>, string]> = [
      [{ content_type: "zip" }, "content_type"],
      [{}, "file"],
    ];
    for (const [values, field] of cases) {
      assert.throws(
        () =>
          releaseFromUpload(1, {
            values: { version: "1.0.0", ...values },
            file: { ...file, contentType: "nope" },
          }),
        (error) => error instanceof ValidationError && error.field === field,
      );
    }
  });
});
