/**
 * The publishing API's JSON bodies (src/publishing/api/mod.ts): read by Hono's
 * validator behind one body limit, after the route's gate, so a token that may
 * not act learns that before anything about its body.
 */
import assert from "node:assert/strict";
import { getRelease } from "../src/store/mod.ts";
import { createTestApp, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken } from "./publish_helpers.ts";

const JSON_TYPE = { "content-type": "application/json" };

function send(app: TestApp, token: string, path: string, init: RequestInit) {
  return app.request(PUBLISH_PREFIX + path, token, init);
}

Deno.test("publishing API: JSON bodies", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  await seedRelease(app, project.id, "1.0.0");
  const release = await seedRelease(app, project.id, "1.1.0", undefined, { build: "b1" });
  const { secret } = await seedPublishToken(app.kv);
  const { secret: uploader } = await seedPublishToken(app.kv, {
    name: "uploader",
    permissions: ["upload"],
  });
  const routes: Array<[string, string]> = [
    ["PATCH", `/releases/${release.id}`],
    ["POST", `/releases/${release.id}/rollout`],
    ["PATCH", "/projects/desktop/rollout"],
  ];

  await t.step("a body that is not sent as JSON is refused, nothing changes", async () => {
    const res = await send(app, secret, `/releases/${release.id}`, {
      method: "PATCH",
      body: JSON.stringify({ build: "b2" }),
      headers: { "content-type": "text/plain" },
    });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error, /Content-Type: application\/json/);
    assert.equal((await getRelease(app.kv, release.id))?.build, "b1");
  });

  await t.step("malformed JSON and a JSON value that is no object are 400", async () => {
    for (const [method, path] of routes) {
      for (const body of ["not json", "[]", "7"]) {
        const res = await send(app, secret, path, { method, body, headers: JSON_TYPE });
        assert.equal(res.status, 400, `${method} ${path} ${body}`);
        assert.equal(typeof (await res.json()).error, "string");
      }
    }
  });

  await t.step("one body limit on every JSON route: 413 with the limit", async () => {
    const body = JSON.stringify({ release_notes: "x".repeat(256 * 1024) });
    for (const [method, path] of routes) {
      const res = await send(app, secret, path, { method, body, headers: JSON_TYPE });
      assert.equal(res.status, 413, `${method} ${path}`);
      assert.deepEqual(await res.json(), {
        error: `the JSON body is larger than ${256 * 1024} bytes`,
      });
    }
  });

  await t.step("the gate answers before the body is judged", async () => {
    const refused = await send(app, uploader, `/releases/${release.id}/rollout`, {
      method: "POST",
      body: "not json",
      headers: JSON_TYPE,
    });
    assert.equal(refused.status, 403);
    assert.match((await refused.json()).error, /lacks the permission release_state/);
    const missing = await send(app, secret, "/releases/999999", {
      method: "PATCH",
      body: "[]",
      headers: JSON_TYPE,
    });
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "release not found" });
  });
});
