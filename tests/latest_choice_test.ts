/** Drafts and a chosen latest (docs/publishing.md "Drafts and a chosen latest"): store, API, admin page. */
import assert from "node:assert/strict";
import { compareVersionLooks } from "../src/releases/latest_notes.ts";
import { publishRelease } from "../src/storage/mod.ts";
import {
  getLatestChoice,
  getLatestRelease,
  makeReleaseLatest,
  NotActiveError,
  publishDraft,
  setReleaseState,
} from "../src/releases/releases.ts";
import { createTestApp, seedKey, seedProject, seedRelease, type TestApp } from "./helpers.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

async function latestVersion(t: TestApp, projectId: number): Promise<string | null> {
  return (await getLatestRelease(t.store, projectId))?.version ?? null;
}

Deno.test("the latest pointer: newest by default, chosen on request, drafts aside", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const v1 = await seedRelease(app, project.id, "1.1.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");

  await t.step(
    "as before: the newest upload is latest, even a rebuild of an older version",
    async () => {
      assert.equal(await latestVersion(app, project.id), "2.0.0");
      const rebuild = await seedRelease(app, project.id, "1.1.0");
      assert.equal((await getLatestRelease(app.store, project.id))?.id, rebuild.id);
      assert.equal(await getLatestChoice(app.store, project.id), null);
      await setReleaseState(app.store, rebuild.id, "archived");
      assert.equal(await latestVersion(app, project.id), "2.0.0");
    },
  );

  await t.step("make latest chooses; a later upload ends the choice", async () => {
    await makeReleaseLatest(app.store, v1.id);
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v1.id);
    assert.equal(await getLatestChoice(app.store, project.id), v1.id);
    const v3 = await seedRelease(app, project.id, "3.0.0");
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v3.id, "upload wins");
    assert.equal(await getLatestChoice(app.store, project.id), null);
    await setReleaseState(app.store, v3.id, "archived");
  });

  await t.step("archiving the chosen latest falls back to the newest active", async () => {
    await makeReleaseLatest(app.store, v1.id);
    await setReleaseState(app.store, v1.id, "archived");
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
    assert.equal(await getLatestChoice(app.store, project.id), null);
    await assert.rejects(makeReleaseLatest(app.store, v1.id), NotActiveError);
    await setReleaseState(app.store, v1.id, "active");
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
  });

  await t.step("an upload that asks not to be latest keeps the latest, as chosen", async () => {
    const beta = await seedReleaseWith(app, project.id, "2.1.0-beta.1", { make_latest: false });
    assert.equal(beta.state, "active");
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
    assert.equal(await getLatestChoice(app.store, project.id), v2.id);
    await setReleaseState(app.store, beta.id, "archived");
  });

  await t.step("a draft leaves the pointer; publishing makes it latest unless asked", async () => {
    const draft = await seedReleaseWith(app, project.id, "4.0.0", { draft: true });
    assert.equal(draft.state, "draft");
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
    const quiet = await seedReleaseWith(app, project.id, "4.0.1", { draft: true });
    await publishDraft(app.store, quiet.id, { makeLatest: false });
    assert.equal((await getLatestRelease(app.store, project.id))?.id, v2.id);
    const published = await publishDraft(app.store, draft.id, { makeLatest: true });
    assert.equal(published.state, "active");
    assert.equal((await getLatestRelease(app.store, project.id))?.id, draft.id);
    // 4.0.1 was uploaded after 4.0.0: 4.0.0 is latest by choice.
    assert.equal(await getLatestChoice(app.store, project.id), draft.id);
  });
});

function seedReleaseWith(
  t: TestApp,
  projectId: number,
  version: string,
  options: { draft?: boolean; make_latest?: boolean },
) {
  return publishRelease(t.store, t.artifacts, {
    release: { project_id: projectId, version, filename: `app-${version}.bin`, ...options },
    source: ReadableStream.from([new TextEncoder().encode(version)]),
    maxBytes: t.config.maxUploadBytes,
  });
}

Deno.test("publishing API: drafts invisible to /api/v1, publish, make latest", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const { secret } = await seedPublishToken(app.store);
  const { secret: key } = await seedKey(app);
  const call = (path: string, init: RequestInit = {}) =>
    app.request(PUBLISH_PREFIX + path, secret, init);
  const upload = async (fields: Record<string, string>) => {
    const res = await call("/projects/desktop/releases", {
      method: "POST",
      body: uploadForm(fields, { bytes: new TextEncoder().encode(fields.version) }),
    });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    return body.release;
  };

  let draft: { id: number; state: string; is_latest: boolean };
  await t.step("a draft upload: stored, listed, invisible to clients", async () => {
    draft = await upload({ version: "2.0.0", draft: "true" });
    assert.deepEqual([draft.state, draft.is_latest], ["draft", false]);
    for (const path of [`/api/v1/releases/${draft.id}`, `/api/v1/releases/${draft.id}/download`]) {
      const res = await app.request(path, key);
      assert.equal(res.status, 404, path);
      await res.body?.cancel();
    }
    const latest = await (await app.request("/api/v1/projects/desktop/releases/latest", key))
      .json();
    assert.equal(latest.release.id, v1.id);
    const list = await (await call("/projects/desktop/releases")).json();
    assert.equal(list.releases[0].state, "draft");
    const bad = await call("/projects/desktop/releases", {
      method: "POST",
      body: uploadForm({ version: "x", draft: "maybe" }, { bytes: new Uint8Array([1]) }),
    });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  });

  await t.step("make latest of a draft is refused (409); publish makes it latest", async () => {
    const refused = await call(`/releases/${draft.id}/make-latest`, { method: "POST" });
    assert.equal(refused.status, 409);
    assert.match((await refused.json()).error, /only an active release/);
    const published = await (await call(`/releases/${draft.id}/publish`, { method: "POST" }))
      .json();
    assert.deepEqual([published.release.state, published.release.is_latest], ["active", true]);
    const again = await call(`/releases/${draft.id}/publish`, { method: "POST" });
    assert.equal(again.status, 409);
    await again.body?.cancel();
    const latest = await (await app.request("/api/v1/projects/desktop/releases/latest", key))
      .json();
    assert.equal(latest.release.id, draft.id);
  });

  await t.step("not_latest upload; make latest; archive falls back", async () => {
    const beta = await upload({ version: "3.0.0-beta.1", not_latest: "true" });
    assert.deepEqual([beta.state, beta.is_latest], ["active", false]);
    const chosen = await (await call(`/releases/${v1.id}/make-latest`, { method: "POST" })).json();
    assert.equal(chosen.release.is_latest, true);
    let latest = await (await app.request("/api/v1/projects/desktop/releases/latest", key)).json();
    assert.equal(latest.release.id, v1.id);
    await (await call(`/releases/${v1.id}/archive`, { method: "POST" })).body?.cancel();
    latest = await (await app.request("/api/v1/projects/desktop/releases/latest", key)).json();
    assert.equal(latest.release.id, beta.id, "the newest active");
  });
});

Deno.test("admin page: upload choices, make latest, publish, why latest, the warning", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const v2 = await seedRelease(app, project.id, "2.0.0");
  const client = await signedInClient(app);
  const page = async () => (await client.page("/admin/projects/desktop/releases")).html;

  await t.step("the newest upload is latest, and says so", async () => {
    const html = await page();
    assert.match(html, /data-latest-reason="newest"/);
    assert.doesNotMatch(html, /data-higher-version-not-latest/);
  });

  await t.step("the form without the new fields uploads as before: latest", async () => {
    const res = await client.upload("/admin/projects/desktop/releases", [
      ["csrf_token", client.csrfToken],
      ["version", "1.1.0"],
      ["file", new File(["rebuild"], "app.bin")],
    ]);
    assert.equal(res.status, 303);
    assert.equal(await latestVersion(app, project.id), "1.1.0");
    const html = await page();
    assert.match(html, /data-higher-version-not-latest/);
    assert.match(html, /Release 2\.0\.0/);
  });

  await t.step("Make latest chooses 2.0.0; the page says why", async () => {
    const res = await client.post(`/admin/releases/${v2.id}/make-latest`);
    assert.equal(res.status, 303);
    assert.equal(await latestVersion(app, project.id), "2.0.0");
    const html = await page();
    assert.match(html, /data-latest-reason="chosen"/);
    assert.doesNotMatch(html, /data-higher-version-not-latest/);
  });

  await t.step("draft and not-latest checkboxes; Publish", async () => {
    const draftRes = await client.upload("/admin/projects/desktop/releases", [
      ["csrf_token", client.csrfToken],
      ["version", "3.0.0"],
      ["draft", "on"],
      ["file", new File(["draft"], "app.bin")],
    ]);
    assert.equal(draftRes.status, 303);
    const quiet = await client.upload("/admin/projects/desktop/releases", [
      ["csrf_token", client.csrfToken],
      ["version", "2.0.1"],
      ["not_latest", "on"],
      ["file", new File(["quiet"], "app.bin")],
    ]);
    assert.equal(quiet.status, 303);
    assert.equal(await latestVersion(app, project.id), "2.0.0");
    const html = await page();
    const draftId = /data-release-id="(\d+)"[^>]*class="state-draft/.exec(html)?.[1];
    assert.ok(draftId, "the draft is listed");
    assert.match(html, new RegExp(`/admin/releases/${draftId}/publish`));
    assert.equal((await client.post(`/admin/releases/${draftId}/publish`)).status, 303);
    assert.equal(await latestVersion(app, project.id), "3.0.0");
  });

  await t.step(
    "Make latest of an archived release: an error message, nothing changed",
    async () => {
      await setReleaseState(app.store, v2.id, "archived");
      const res = await client.post(`/admin/releases/${v2.id}/make-latest`);
      assert.equal(res.status, 303);
      assert.match(await page(), /only an active release can be latest/);
      assert.equal(await latestVersion(app, project.id), "3.0.0");
    },
  );
});

Deno.test("versions by looks", () => {
  const cases: Array<[string, string, -1 | 0 | 1 | null]> = [
    ["2.0.0", "1.1.0", 1],
    ["1.10", "1.9", 1],
    ["v2.0", "2.0.0", 0],
    ["2.0.0", "2.0.0-beta.1", 1],
    ["2.0.0-beta.10", "2.0.0-beta.9", 1],
    ["nightly", "1.0", null],
  ];
  for (const [a, b, expected] of cases) {
    assert.equal(compareVersionLooks(a, b), expected, `${a} ${b}`);
  }
});

/** The releases card's sentence on which release which clients get, as text. */
function offerSentence(html: string): { kind: string; text: string } {
  const found = /<p data-latest-reason="[^"]*" data-offer="([^"]*)">([\s\S]*?)<\/p>/.exec(html);
  assert.ok(found, "the sentence is on the page");
  const text = found[2].replace(/<[^>]+>/g, "").replace(/\s+/g, " ").trim();
  return { kind: found[1], text };
}

Deno.test("the releases card: one sentence, from the API's offer, says who gets what", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  const old = await seedRelease(app, project.id, "2.4.0");
  const next = await seedRelease(app, project.id, "2.5.0");
  const { secret } = await seedKey(app);
  const client = await signedInClient(app);
  const page = async () => (await client.page("/admin/projects/app/releases")).html;
  /** How many of 200 install ids the client API answers 2.5.0. */
  const reach = async () => {
    let count = 0;
    for (let i = 0; i < 200; i++) {
      const res = await app.request("/api/v1/projects/app/releases/latest", secret, {
        headers: { "x-install-id": `install-${i}` },
      });
      if ((await res.json()).release.version === "2.5.0") count++;
    }
    return count;
  };
  const chosen = "chosen with Make latest (or by an upload that asked not to replace it)";

  await t.step("no choice: the newest active upload, for every client", async () => {
    assert.deepEqual(offerSentence(await page()), {
      kind: "latest",
      text: "Clients get 2.5.0 as latest because it is the newest active upload.",
    });
    assert.equal(await reach(), 200);
  });

  await t.step("chosen: the admin's choice, and the higher version is flagged", async () => {
    assert.equal((await client.post(`/admin/releases/${old.id}/make-latest`)).status, 303);
    const html = await page();
    assert.deepEqual(offerSentence(html), {
      kind: "latest",
      text: `Clients get 2.4.0 as latest because it was ${chosen}; archiving it makes the ` +
        "newest active release latest again.",
    });
    assert.match(html, /data-higher-version-not-latest/);
    assert.equal(await reach(), 0);
  });

  await t.step(
    "rollout at 10%: that share gets 2.5.0, the rest the latest; no warning",
    async () => {
      const res = await client.post("/admin/projects/app/rollout", {
        release_id: String(next.id),
        percentage: "10",
        tester_tag: "beta",
      });
      assert.equal(res.status, 303);
      const html = await page();
      assert.deepEqual(offerSentence(html), {
        kind: "rollout",
        text: `10% of installs get 2.5.0 (staged rollout) and the others get 2.4.0, the latest ` +
          `(${chosen}); keys tagged beta get 2.5.0 whatever the percentage.`,
      });
      assert.doesNotMatch(html, /data-higher-version-not-latest/, "2.5.0 is offered: no warning");
      const share = await reach();
      assert.ok(share > 0 && share < 60, `about 10% of 200 install ids, got ${share}`);
    },
  );

  await t.step("halted: every client gets the latest", async () => {
    assert.equal((await client.post("/admin/projects/app/rollout/halt")).status, 303);
    const html = await page();
    assert.deepEqual(offerSentence(html), {
      kind: "halted",
      text: `Every client gets 2.4.0, the latest (${chosen}): the staged rollout of 2.5.0 is ` +
        "halted.",
    });
    assert.doesNotMatch(html, /data-higher-version-not-latest/);
    assert.equal(await reach(), 0);
  });

  await t.step("resumed at 0% and at 100%: the sentence follows the API", async () => {
    assert.equal((await client.post("/admin/projects/app/rollout/resume")).status, 303);
    for (
      const [percentage, text, reached] of [
        [
          "0",
          `Only keys tagged beta get 2.5.0 (staged rollout at 0%); every other client gets ` +
          `2.4.0, the latest (${chosen}).`,
          0,
        ],
        [
          "100",
          "Every client gets 2.5.0 (staged rollout at 100%); 2.4.0 stays the latest until " +
          "the rollout is completed or ended.",
          200,
        ],
      ] as const
    ) {
      const res = await client.post("/admin/projects/app/rollout/change", {
        percentage,
        tester_tag: "beta",
      });
      assert.equal(res.status, 303);
      assert.deepEqual(offerSentence(await page()), { kind: "rollout", text });
      assert.equal(await reach(), reached);
    }
  });

  await t.step(
    "a schedule step reached: the sentence and the card say its percentage",
    async () => {
      const res = await client.post("/admin/projects/app/rollout/change", {
        percentage: "10",
        schedule: "2020-01-01T00:00:00Z=50",
        tester_tag: "",
      });
      assert.equal(res.status, 303);
      const html = await page();
      assert.deepEqual(offerSentence(html), {
        kind: "rollout",
        text: `50% of installs get 2.5.0 (staged rollout) and the others get 2.4.0, the latest ` +
          `(${chosen}).`,
      });
      assert.match(
        (await client.page("/admin/projects/app/rollout")).html,
        /data-rollout-percentage="true">50%/,
      );
      const share = await reach();
      assert.ok(share > 60 && share < 140, `about 50% of 200 install ids, got ${share}`);
    },
  );

  await t.step(
    "the rollout's release archived: the rollout is inert, the latest for all",
    async () => {
      await setReleaseState(app.store, next.id, "archived");
      assert.equal(offerSentence(await page()).kind, "latest");
      assert.equal(await reach(), 0);
    },
  );
});
