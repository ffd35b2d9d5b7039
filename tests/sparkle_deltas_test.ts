/**
 * Sparkle deltas (src/storage/sparkle_delta_parts.ts, docs/feeds.md "Sparkle
 * deltas"): uploaded with the release through the publishing API, listed in
 * the appcast under `<sparkle:deltas>` with their `sparkle:deltaFrom`, length
 * and signature, downloaded behind the key rules; refused (nothing stored)
 * when they do not pair up; kept by the storage sweep.
 */
import assert from "node:assert/strict";
import { createFsStore, sweepStore } from "../src/storage/mod.ts";
import { assertError } from "./asserts.ts";
import { createTestApp, listDir, seedKey, seedProject } from "./helpers.ts";
import { appendParts, PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

const signature = (fill: number) => btoa(String.fromCharCode(...new Uint8Array(64).fill(fill)));

Deno.test("sparkle deltas: uploaded with the release, listed in the appcast", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "mac-app", name: "Mac App" });
  const other = await seedProject(app, { slug: "other" });
  const { secret: token } = await seedPublishToken(app.store);
  const { secret } = await seedKey(app);
  const app3 = new Uint8Array(5000).fill(3);
  const deltas = [new Uint8Array(300).fill(1), new Uint8Array(200).fill(2)];
  const upload = (fields: Array<[string, string | Blob, string?]>) => {
    const form = uploadForm(
      { version: "3.0", build: "3", sparkle_signature: signature(9) },
      { bytes: app3, name: "App.zip" },
    );
    appendParts(form, fields);
    return app.request(`${PUBLISH_PREFIX}/projects/mac-app/releases`, token, {
      method: "POST",
      body: form,
    });
  };
  const blob = (bytes: Uint8Array) => new Blob([bytes as Uint8Array<ArrayBuffer>]);

  await t.step("refused unless every delta has its version and signature", async () => {
    const before = await listDir(app.config.artifactsDir);
    const res = await upload([
      ["sparkle_delta", blob(deltas[0]), "App3-2.delta"],
      ["sparkle_delta_from", "2"],
    ]);
    assert.equal(res.status, 400);
    assert.match((await res.json()).error, /sparkle_delta/);
    assert.deepEqual(await listDir(app.config.artifactsDir), before, "nothing stored");
  });

  let releaseId = 0;
  await t.step("listed in the appcast under sparkle:deltas", async () => {
    const res = await upload([
      ["sparkle_delta", blob(deltas[0]), "App3-2.delta"],
      ["sparkle_delta_from", "2"],
      ["sparkle_delta_signature", signature(1)],
      ["sparkle_delta", blob(deltas[1]), "dir/App3-1.delta"],
      ["sparkle_delta_from", "1"],
      ["sparkle_delta_signature", signature(2)],
    ]);
    assert.equal(res.status, 201, await res.clone().text());
    releaseId = (await res.json()).release.id;
    const xml = await (await app.request("/feeds/sparkle/mac-app/appcast.xml", secret)).text();
    const base = `${
      app.config.baseUrl.replace(/\/+$/, "")
    }/feeds/sparkle/mac-app/deltas/${releaseId}`;
    assert.ok(
      xml.includes(
        `<sparkle:deltas>\n        <enclosure url="${base}/0/App3-2.delta" sparkle:deltaFrom="2" ` +
          `length="300" type="application/octet-stream" sparkle:edSignature="${signature(1)}"/>`,
      ),
      xml,
    );
    assert.ok(xml.includes(`url="${base}/1/App3-1.delta" sparkle:deltaFrom="1" length="200"`));
  });

  await t.step("downloaded with the key; the key rules apply", async () => {
    const path = `/feeds/sparkle/mac-app/deltas/${releaseId}/1/App3-1.delta`;
    const res = await app.request(path, secret);
    assert.equal(res.status, 200);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), deltas[1]);
    await assertError(await app.request(path), 401, "missing bearer api key");
    const scoped = await seedKey(app, {
      scope_mode: "project_allow_list",
      project_ids: [other.id],
    });
    await assertError(await app.request(path, scoped.secret), 404, "resource not found");
    for (
      const wrong of [
        `/feeds/sparkle/mac-app/deltas/${releaseId}/2/App3-1.delta`,
        `/feeds/sparkle/mac-app/deltas/${releaseId}/1/App3-2.delta`,
        `/feeds/sparkle/other/deltas/${releaseId}/1/App3-1.delta`,
      ]
    ) {
      await assertError(await app.request(wrong, secret), 404, "resource not found");
    }
    assert.equal(project.slug, "mac-app");
  });

  await t.step("the storage sweep keeps them", async () => {
    const sweeping = createFsStore(app.config.artifactsDir, { sweepAfterMs: 0 });
    const result = await sweepStore(app.store, sweeping);
    assert.equal(result.removedArtifacts, 0);
    const res = await app.request(
      `/feeds/sparkle/mac-app/deltas/${releaseId}/0/App3-2.delta`,
      secret,
    );
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), deltas[0]);
  });
});
