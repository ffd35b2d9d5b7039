/**
 * docs/publishing-openapi.yaml describes the publishing API as registered:
 * the same (method, path) pairs, and real answers validate against its schemas.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020";
import { parse } from "yaml";
import { makeReleaseLatest } from "../src/releases/releases.ts";
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
  const { secret } = await seedPublishToken(app.store);

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

  await t.step(
    "every rollout answer validates; its ids are integers like a release's",
    async () => {
      const latest = await seedRelease(app, project.id, "3.0.0");
      const staged = await seedRelease(app, project.id, "3.1.0");
      await makeReleaseLatest(app.store, latest.id);
      const send = (method: string, path: string, body?: unknown) =>
        app.request(`${PUBLISH_PREFIX}${path}`, secret, {
          method,
          ...(body === undefined ? {} : {
            body: JSON.stringify(body),
            headers: { "content-type": "application/json" },
          }),
        });
      const answers = [
        await send("POST", `/releases/${staged.id}/rollout`, { percentage: 10 }),
        await send("GET", "/projects/desktop/rollout"),
        await send("PATCH", "/projects/desktop/rollout", { percentage: 20, tester_tag: "beta" }),
        await send("POST", "/projects/desktop/rollout/halt"),
        await send("POST", "/projects/desktop/rollout/resume"),
      ];
      for (const res of answers) {
        assert.equal(res.status, 200);
        const body = await res.json();
        check("RolloutEnvelope", body);
        assert.equal(body.rollout.release_id, staged.id);
        assert.equal(body.rollout.previous_id, latest.id);
      }
      const ended = await send("POST", "/projects/desktop/rollout/end");
      assert.equal(ended.status, 200);
      check("RolloutEnvelope", await ended.json());
      await send("POST", `/releases/${staged.id}/rollout`, { percentage: 10 });
      const completed = await send("POST", "/projects/desktop/rollout/complete");
      assert.equal(completed.status, 200);
      check("ReleaseEnvelope", await completed.json());
    },
  );
});
