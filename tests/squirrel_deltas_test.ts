/**
 * Squirrel.Windows deltas (src/storage/sparkle_delta_parts.ts, src/feeds/squirrel.ts,
 * docs/feeds.md "Squirrel.Windows deltas"): a `-delta.nupkg` uploaded with its release through
 * the publishing API, listed in RELEASES as Squirrel.Windows' `ReleaseEntry` parses it only as a
 * complete chain from the client's version, never on a halt's or rollback's offer, downloaded
 * behind the key rules, kept by the storage sweep.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { rollBack } from "../src/releases/release_policy.ts";
import { changeRollout } from "../src/releases/rollouts.ts";
import { createFsStore, sweepStore } from "../src/storage/mod.ts";
import { feedCredential } from "../src/feeds/url_credential.ts";
import { assertError } from "./asserts.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { createTestApp, listDir, seedKey, seedProject } from "./helpers.ts";
import { appendParts, PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";

const sha1 = (bytes: Uint8Array) => createHash("sha1").update(bytes).digest("hex");
const blob = (bytes: Uint8Array) => new Blob([bytes as Uint8Array<ArrayBuffer>]);

/** Squirrel.Windows' `ReleaseEntry.ParseReleaseEntry` of one line, as tests/squirrel_feed_test.ts. */
function parseReleaseEntry(line: string) {
  const match = /^([0-9a-fA-F]{40})\s+(\S+)\s+(\d+)[\r]*$/.exec(line);
  assert.ok(match, `a release entry: ${line}`);
  const [, sha, url, size] = match;
  const filename = url.slice(url.lastIndexOf("/") + 1);
  return {
    sha1: sha.toLowerCase(),
    path: new URL(url).pathname,
    filename,
    size: Number(size),
    version: /-(\d+(?:\.\d+)*)-(?:full|delta)\.nupkg$/i.exec(filename)?.[1],
    isDelta: /-delta\.nupkg$/i.test(filename),
  };
}

/** Squirrel.Windows' choice (`UpdateInfo.Create`): every delta newer than the client, oldest first. */
function deltasApplied(entries: ReturnType<typeof parseReleaseEntry>[], client: string) {
  const newer = (v: string) => {
    const [a, b] = [v, client].map((x) => x.split(".").map(Number));
    for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
    return false;
  };
  return entries.filter((e) => e.isDelta && newer(e.version!)).map((e) => e.version);
}

Deno.test("Squirrel.Windows deltas: uploaded with a release, listed as a complete chain", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desk-win" });
  const other = await seedProject(app, { slug: "other" });
  const { secret: token } = await seedPublishToken(app.store);
  const { apiKey, secret } = await seedKey(app);
  const full = (n: number) => new Uint8Array(6000 + n).fill(n);
  const delta = (n: number) => new Uint8Array(100 + n).fill(100 + n);
  const upload = (
    version: string,
    fields: Array<[string, string | Blob, string?]> = [],
    extra: Record<string, string> = {},
  ) => {
    const n = Number(version.split(".")[1]);
    const form = uploadForm({ version, ...extra }, {
      bytes: full(n),
      name: `Desk-${version}-full.nupkg`,
    });
    appendParts(form, fields);
    return app.request(`${PUBLISH_PREFIX}/projects/desk-win/releases`, token, {
      method: "POST",
      body: form,
    });
  };
  const releases = async (client: string, key = secret) => {
    const res = await app.request(`/feeds/squirrel/desk/win32/${client}/RELEASES`, key);
    assert.equal(res.status, 200);
    return (await res.text()).split("\n").map(parseReleaseEntry);
  };

  await t.step("refused (nothing stored) unless named for its release", async () => {
    assert.equal((await upload("1.1.0")).status, 201);
    const before = await listDir(app.config.artifactsDir);
    for (
      const fields of [
        [["squirrel_delta", blob(delta(2)), "Desk-1.3.0-delta.nupkg"]],
        [["squirrel_delta", blob(delta(2)), "Desk-1.2.0-full.nupkg"]],
        [["squirrel_delta_from", "1.1.0"]],
        [
          ["squirrel_delta", blob(delta(2)), "Desk-1.2.0-delta.nupkg"],
          ["squirrel_delta", blob(delta(2)), "Desk-1.2.0-delta.nupkg"],
        ],
      ] as Array<Array<[string, string | Blob, string?]>>
    ) {
      const res = await upload("1.2.0", fields);
      assert.equal(res.status, 400);
      assert.match((await res.json()).error, /squirrel_delta/);
    }
    assert.deepEqual(await listDir(app.config.artifactsDir), before, "nothing stored");
  });

  await t.step("RELEASES lists the full package and the chain, oldest delta first", async () => {
    // 1.2.0's delta applies to the release uploaded before it; 1.3.0's names its base.
    const two = await upload("1.2.0", [[
      "squirrel_delta",
      blob(delta(2)),
      "Desk-1.2.0-delta.nupkg",
    ]]);
    assert.equal(two.status, 201, await two.clone().text());
    const three = await upload("1.3.0", [
      ["squirrel_delta", blob(delta(3)), "dir\\Desk-1.3.0-delta.nupkg"],
      ["squirrel_delta_from", "1.2.0"],
    ]);
    assert.equal(three.status, 201, await three.clone().text());
    const entries = await releases("1.1.0");
    assert.deepEqual(
      entries.map((e) => [e.filename, e.sha1, e.size]),
      [
        ["Desk-1.3.0-full.nupkg", sha1(full(3)), full(3).byteLength],
        ["Desk-1.2.0-delta.nupkg", sha1(delta(2)), delta(2).byteLength],
        ["Desk-1.3.0-delta.nupkg", sha1(delta(3)), delta(3).byteLength],
      ],
    );
    assert.deepEqual(deltasApplied(entries, "1.1.0"), ["1.2.0", "1.3.0"]);
    assert.equal(entries[1].path, "/feeds/squirrel/desk/win32/1.2.0/Desk-1.2.0-delta.nupkg");
    // One version behind: only the last delta.
    const one = await releases("1.2.0");
    assert.deepEqual(one.map((e) => e.filename), [
      "Desk-1.3.0-full.nupkg",
      "Desk-1.3.0-delta.nupkg",
    ]);
  });

  await t.step("a chain with a missing link lists the full package only", async () => {
    // 1.0.0 is older than the first delta's base: no delta reaches it.
    assert.deepEqual((await releases("1.0.0")).map((e) => e.filename), ["Desk-1.3.0-full.nupkg"]);
    // A client on a version the service never had, between the links.
    assert.deepEqual((await releases("1.1.5")).map((e) => e.filename), ["Desk-1.3.0-full.nupkg"]);
    // 1.4.0 has no delta: clients two versions behind take the full package.
    assert.equal((await upload("1.4.0")).status, 201);
    assert.deepEqual((await releases("1.2.0")).map((e) => e.filename), ["Desk-1.4.0-full.nupkg"]);
    // 1.5.0's delta applies to 1.4.0: a chain from 1.2.0 breaks at 1.4.0.
    const five = await upload("1.5.0", [[
      "squirrel_delta",
      blob(delta(5)),
      "Desk-1.5.0-delta.nupkg",
    ]]);
    assert.equal(five.status, 201);
    assert.deepEqual((await releases("1.2.0")).map((e) => e.filename), ["Desk-1.5.0-full.nupkg"]);
    assert.deepEqual((await releases("1.4.0")).map((e) => e.filename), [
      "Desk-1.5.0-full.nupkg",
      "Desk-1.5.0-delta.nupkg",
    ]);
  });

  await t.step("downloads need the key, URL credential or header, in its scope", async () => {
    const path = "/feeds/squirrel/desk/win32/1.5.0/Desk-1.5.0-delta.nupkg";
    const res = await app.request(path, secret);
    assert.equal(res.status, 200);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), delta(5));
    const viaUrl = await app.request(
      `/feeds/c/${feedCredential(apiKey.id, secret)}${path.slice(6)}`,
    );
    assert.equal(viaUrl.status, 200);
    assert.deepEqual(new Uint8Array(await viaUrl.arrayBuffer()), delta(5));
    await assertError(await app.request(path), 401, "missing bearer api key");
    const noDownload = await seedKey(app, { can_download: false });
    await assertError(await app.request(path, noDownload.secret), 403, "api key permission denied");
    const scoped = await seedKey(app, {
      scope_mode: "project_allow_list",
      project_ids: [other.id],
    });
    await assertError(await app.request(path, scoped.secret), 404, "resource not found");
    for (
      const wrong of [
        "/feeds/squirrel/desk/win32/1.4.0/Desk-1.5.0-delta.nupkg",
        "/feeds/squirrel/desk/win32/1.4.0/Desk-1.4.0-delta.nupkg",
      ]
    ) {
      await assertError(await app.request(wrong, secret), 404, "resource not found");
    }
  });

  await t.step("the storage sweep keeps them", async () => {
    const sweeping = createFsStore(app.config.artifactsDir, { sweepAfterMs: 0 });
    assert.equal((await sweepStore(app.store, sweeping)).removedArtifacts, 0);
    const res = await app.request(
      "/feeds/squirrel/desk/win32/1.2.0/Desk-1.2.0-delta.nupkg",
      secret,
    );
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), delta(2));
  });

  const tester = await seedKey(app, { rollout_tags: ["beta"] });
  await t.step("a halted rollout's release is not listed, nor its delta", async () => {
    const six = await upload("1.6.0", [
      ["squirrel_delta", blob(delta(6)), "Desk-1.6.0-delta.nupkg"],
    ], { rollout_percentage: "0", rollout_tester_tag: "beta" });
    assert.equal(six.status, 201, await six.clone().text());
    assert.deepEqual((await releases("1.5.0", tester.secret)).map((e) => e.filename), [
      "Desk-1.6.0-full.nupkg",
      "Desk-1.6.0-delta.nupkg",
    ]);
    assert.deepEqual((await releases("1.5.0")).map((e) => e.filename), ["Desk-1.5.0-full.nupkg"]);
    await changeRollout(app.store, project.id, { halted: true });
    assert.deepEqual((await releases("1.5.0", tester.secret)).map((e) => e.filename), [
      "Desk-1.5.0-full.nupkg",
    ]);
  });

  await t.step("a rollback's offer lists no deltas", async () => {
    await rollBack(app.store, project.id);
    const back = await releases("1.6.0", tester.secret);
    assert.deepEqual(back.map((e) => e.filename), ["Desk-1.5.0-full.nupkg"]);
    assert.deepEqual(deltasApplied(back, "1.6.0"), []);
  });
});

Deno.test("Squirrel.Windows deltas: the admin upload form", async (t) => {
  await using app = await createAdminTestApp();
  await seedProject(app, { slug: "desk-win" });
  const { secret } = await seedKey(app);
  const admin = await signedInClient(app);
  const { html } = await admin.page("/admin/projects/desk-win");
  assert.match(html, /<input[^>]*name="squirrel_delta"[^>]*type="file"/);
  assert.match(html, /name="squirrel_delta_from"/);
  const file = (name: string, n: number) =>
    new File([new Uint8Array(3000 + n).fill(n) as Uint8Array<ArrayBuffer>], name);
  const upload = (version: string, parts: Array<[string, string | File]>) =>
    admin.upload("/admin/projects/desk-win/releases", [
      ["csrf_token", admin.csrfToken],
      ["version", version],
      ["file", file(`Desk-${version}-full.nupkg`, Number(version[0]))],
      ...parts,
    ]);

  await t.step("an empty delta input is no delta", async () => {
    const res = await upload("1.0.0", [
      ["squirrel_delta", new File([], "")],
      ["squirrel_delta_from", ""],
    ]);
    assert.equal(res.status, 303, await res.text());
  });

  await t.step("a wrongly named delta shows the form again, by its label", async () => {
    const res = await upload("2.0.0", [["squirrel_delta", file("Desk-1.0.0-delta.nupkg", 9)]]);
    assert.equal(res.status, 400);
    const page = await res.text();
    assert.match(page, /Squirrel\.Windows delta package must be the delta package/);
    assert.match(page, /value="2\.0\.0"/, "what was entered is kept");
  });

  await t.step("a delta uploaded with the form is listed and downloaded", async () => {
    const res = await upload("2.0.0", [["squirrel_delta", file("Desk-2.0.0-delta.nupkg", 9)]]);
    assert.equal(res.status, 303, await res.text());
    const text = await (await app.request("/feeds/squirrel/desk/win32/1.0.0/RELEASES", secret))
      .text();
    const entries = text.split("\n").map(parseReleaseEntry);
    assert.deepEqual(entries.map((e) => e.filename), [
      "Desk-2.0.0-full.nupkg",
      "Desk-2.0.0-delta.nupkg",
    ]);
    const delta = await app.request(entries[1].path, secret);
    assert.equal(delta.status, 200);
    assert.equal((await delta.arrayBuffer()).byteLength, 3009);
  });
});
