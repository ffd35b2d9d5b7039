/**
 * The publishing API's JSON bodies (src/publishing/api/mod.ts): read by Hono's
 * validator behind one body limit, after the route's gate, so a token that may
 * not act learns that before anything about its body.
 */
import assert from "node:assert/strict";
import { getRelease } from "../src/releases/releases.ts";
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
  const { secret } = await seedPublishToken(app.store);
  const { secret: uploader } = await seedPublishToken(app.store, {
    name: "uploader",
    permissions: ["upload"],
  });
  const routes: Array<[string, string]> = [
    ["PATCH", `/releases/${release.id}`],
    ["POST", `/releases/${release.id}/rollout`],
    ["PATCH", "/projects/desktop/rollout"],
  ];

  await t.step("a body sent without a JSON Content-Type is read as JSON", async () => {
    const body = (build: string) => JSON.stringify({ build });
    const sent: Array<[string, RequestInit]> = [
      ["b-text", { body: body("b-text"), headers: { "content-type": "text/plain" } }],
      // Bytes: the request carries no Content-Type at all.
      ["b-none", { body: new TextEncoder().encode(body("b-none")) }],
    ];
    for (const [build, init] of sent) {
      const res = await send(app, secret, `/releases/${release.id}`, { method: "PATCH", ...init });
      assert.equal(res.status, 200, build);
      assert.equal((await getRelease(app.store, release.id))?.build, build);
    }
    const bad = await send(app, secret, `/releases/${release.id}`, {
      method: "PATCH",
      body: "build=b3",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), {
      error: 'send a JSON object such as {"release_notes": "…"}',
    });
    assert.equal((await getRelease(app.store, release.id))?.build, "b-none");
  });

  await t.step(
    "malformed JSON and a JSON value that is no object: 400 with an example",
    async () => {
      const examples = ['{"release_notes": "…"}', '{"percentage": 10}', '{"percentage": 10}'];
      for (const [index, [method, path]] of routes.entries()) {
        for (const body of ["not json", "[]", "7", ""]) {
          const res = await send(app, secret, path, { method, body, headers: JSON_TYPE });
          assert.equal(res.status, 400, `${method} ${path} ${body}`);
          assert.deepEqual(await res.json(), {
            error: `send a JSON object such as ${examples[index]}`,
          });
        }
      }
    },
  );

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
