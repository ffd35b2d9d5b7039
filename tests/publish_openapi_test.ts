/**
 * docs/publishing-openapi.yaml describes the publishing API as registered:
 * the same (method, path) pairs, and real answers validate against its schemas.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020";
import { parse } from "yaml";
import { createTestApp, seedProject, seedRelease, sha256 } from "./helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

type Json = Record<string, unknown>;
const doc = parse(
  await Deno.readTextFile(new URL("../docs/publishing-openapi.yaml", import.meta.url)),
) as Json;
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat("date-time", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
ajv.addSchema(doc, "publishing.json");

function check(schema: string, body: unknown) {
  const validate = ajv.compile({ $ref: `publishing.json#/components/schemas/${schema}` });
  assert.ok(validate(body), `${schema}: ${JSON.stringify(validate.errors)}`);
}

Deno.test("the publishing OpenAPI document matches the routes and the answers", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  await seedRelease(app, project.id, "1.0.0", new TextEncoder().encode("x"), { build: "7" });
  const { secret } = await seedPublishToken(app.kv);

  await t.step("documented paths are the registered ones", () => {
    const documented = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, ops]) =>
      Object.keys(ops).filter((key) => key !== "parameters").map((method) =>
        `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`
      )
    ).sort();
    const registered = app.app.routes
      .filter((r) => r.path.startsWith(`${PUBLISH_PREFIX}/`) && r.method !== "ALL")
      .map((r) =>
        `${r.method} ${
          r.path.slice(PUBLISH_PREFIX.length).replace(":slug", ":projectSlug").replace(
            ":id",
            ":releaseID",
          )
        }`
      );
    assert.deepEqual([...new Set(registered)].sort(), documented);
  });

  await t.step("answers validate", async () => {
    const bytes = new TextEncoder().encode("artifact");
    const upload = await app.request(`${PUBLISH_PREFIX}/projects/desktop/releases`, secret, {
      method: "POST",
      body: uploadForm({ version: "2.0.0", sha256: sha256(bytes) }, { bytes }),
    });
    assert.equal(upload.status, 201);
    const created = await upload.json();
    check("ReleaseEnvelope", created);
    const list = await (await app.request(`${PUBLISH_PREFIX}/projects/desktop/releases`, secret))
      .json();
    for (const release of list.releases) check("PublishedRelease", release);
    check("Project", list.project);
    check(
      "Token",
      (await (await app.request(`${PUBLISH_PREFIX}/token`, secret)).json()).token,
    );
    const error = await app.request(`${PUBLISH_PREFIX}/releases/abc`, secret);
    assert.equal(error.status, 400);
    check("Error", await error.json());
  });
});
