/**
 * Electron's built-in autoUpdater (docs/feeds.md "Electron's autoUpdater (Squirrel)"): the
 * Squirrel.Mac JSON and Squirrel.Windows RELEASES answers in the forms their clients parse, the
 * credential in the URL, and the key, rollout, halt and rollback rules of every feed.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { setApiKeyActive } from "../src/credentials/api_keys.ts";
import { apiKeyKey } from "../src/kv/keys.ts";
import { rollBack } from "../src/releases/release_policy.ts";
import { changeRollout, startRollout } from "../src/releases/rollouts.ts";
import { accessLogRecord } from "../src/lib/log.ts";
import { createFsStore } from "../src/storage/fs_store.ts";
import { redactUrlCredential } from "../src/lib/url_credential_path.ts";
import { feedCredential } from "../src/feeds/url_credential.ts";
import { assertError, assertProtectedHeaders } from "./asserts.ts";
import { createTestApp, downloadCount, seedKey, seedProject, seedRelease } from "./helpers.ts";

const sha1 = (bytes: Uint8Array) => createHash("sha1").update(bytes).digest("hex");
const bytesOf = (text: string) => new TextEncoder().encode(text.repeat(300));

/**
 * Squirrel.Windows' parse of a RELEASES line (its `ReleaseEntry.ParseReleaseEntry`):
 * `^([0-9a-fA-F]{40})\s+(\S+)\s+(\d+)[\r]*$`, an absolute URL split at its last `/` into the
 * base URL and the file name, the version read from the file name, `-delta.nupkg` a delta.
 */
function parseReleaseEntry(line: string) {
  const match = /^([0-9a-fA-F]{40})\s+(\S+)\s+(\d+)[\r]*$/.exec(line);
  assert.ok(match, `a release entry: ${line}`);
  const [, sha, name, size] = match;
  assert.match(name, /^https?:\/\//, "an absolute URL");
  const cut = name.lastIndexOf("/") + 1;
  const filename = name.slice(cut);
  assert.doesNotMatch(filename, /[<>:"/\\|?*\x00-\x1f]/, "a valid Windows file name");
  return {
    sha1: sha,
    baseUrl: name.slice(0, cut),
    filename,
    size: Number(size),
    version: /-(\d+(?:\.\d+)*)-(?:full|delta)\.nupkg$/i.exec(filename)?.[1],
    isDelta: /-delta\.nupkg$/i.test(filename),
  };
}

/** The path of an absolute URL the service wrote (the test app's requests take paths). */
const pathOf = (url: string) => new URL(url).pathname;

Deno.test("Electron's autoUpdater: Squirrel.Mac and Squirrel.Windows", async (t) => {
  await using app = await createTestApp();
  const mac = await seedProject(app, { slug: "desk-mac" });
  const win = await seedProject(app, { slug: "desk-win" });
  const macOld = bytesOf("mac one ");
  const macNew = bytesOf("mac two ");
  const winNew = bytesOf("win two ");
  await seedRelease(app, mac.id, "1.0.0", macOld, { filename: "Desk-1.0.0.zip" });
  const macRelease = await seedRelease(app, mac.id, "2.0.0", macNew, {
    filename: "Desk-2.0.0-darwin-x64.zip",
    release_notes: "Faster & better",
  });
  const winOld = await seedRelease(app, win.id, "1.0.0", bytesOf("win one "), {
    filename: "Desk-1.0.0-full.nupkg",
  });
  const winRelease = await seedRelease(app, win.id, "2.0.0", winNew, {
    filename: "Desk-2.0.0-full.nupkg",
  });
  const { apiKey, secret } = await seedKey(app);
  const credential = feedCredential(apiKey.id, secret);

  await t.step("Squirrel.Mac: the update JSON of Squirrel.Mac's README, for darwin", async () => {
    for (const platform of ["darwin", "darwin-x64", "darwin-arm64"]) {
      const res = await app.request(`/feeds/squirrel/desk/${platform}/1.0.0`, secret);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assertProtectedHeaders(res);
      const body = await res.json();
      // The README's example: {"url": …, "name": …, "notes": …, "pub_date": "2013-09-18T12:29:53+01:00"}
      assert.deepEqual(Object.keys(body), ["url", "name", "notes", "pub_date"]);
      assert.equal(body.name, "2.0.0");
      assert.equal(body.notes, "Faster & better");
      assert.match(body.pub_date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
      assert.equal(body.pub_date, macRelease.created_at.slice(0, 19) + "+00:00");
      assert.equal(
        pathOf(body.url),
        `/feeds/squirrel/desk/${platform}/2.0.0/Desk-2.0.0-darwin-x64.zip`,
      );
      assert.match(body.url, /^https?:\/\//, "Squirrel.Mac downloads an absolute URL");
      const zip = await app.request(pathOf(body.url), secret);
      assert.equal(zip.status, 200);
      assert.deepEqual(new Uint8Array(await zip.arrayBuffer()), macNew);
    }
  });

  await t.step(
    "Squirrel.Mac: 204 and no body when the client runs the offered version",
    async () => {
      const res = await app.request("/feeds/squirrel/desk/darwin/2.0.0", secret);
      assert.equal(res.status, 204);
      assert.equal(await res.text(), "");
      assertProtectedHeaders(res);
    },
  );

  await t.step("Squirrel.Windows: RELEASES as ReleaseEntry parses it, file downloads", async () => {
    const before = await downloadCount(app.store, winRelease.id);
    // Squirrel.Windows appends /RELEASES and its query to the URL it was given.
    const res = await app.request(
      `/feeds/c/${credential}/squirrel/desk/win32/1.0.0/RELEASES?id=Desk&localVersion=1.0.0&arch=amd64`,
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
    const text = await res.text();
    const lines = text.split("\n").filter((line) => line.trim() !== "");
    assert.equal(lines.length, 1);
    const entry = parseReleaseEntry(lines[0]);
    assert.equal(entry.sha1.toLowerCase(), sha1(winNew));
    assert.equal(entry.size, winNew.byteLength);
    assert.equal(entry.filename, "Desk-2.0.0-full.nupkg");
    assert.equal(entry.version, "2.0.0");
    assert.equal(entry.isDelta, false);
    assert.equal(pathOf(entry.baseUrl), `/feeds/c/${credential}/squirrel/desk/win32/2.0.0/`);
    // Squirrel.Windows downloads baseUrl + filename, with no headers.
    const file = await app.request(pathOf(entry.baseUrl + entry.filename));
    assert.equal(file.status, 200);
    assert.deepEqual(new Uint8Array(await file.arrayBuffer()), winNew);
    assert.equal(await downloadCount(app.store, winRelease.id), before + 1);
  });

  await t.step("Squirrel.Windows: a current client is listed its own release", async () => {
    const res = await app.request("/feeds/squirrel/desk/win32-x64/2.0.0/RELEASES", secret);
    const entry = parseReleaseEntry((await res.text()).trim());
    assert.equal(entry.version, "2.0.0");
    const old = await app.request("/feeds/squirrel/desk/win32/1.0.0/Desk-1.0.0-full.nupkg", secret);
    assert.equal(old.status, 200, "every active release's file by its version");
    await old.arrayBuffer();
    assert.equal(winOld.filename, "Desk-1.0.0-full.nupkg");
  });

  await t.step("the key rules: header or URL credential, 401, 403, scope 404", async () => {
    const macPath = "/feeds/squirrel/desk/darwin/1.0.0";
    await assertError(await app.request(macPath), 401, "missing bearer api key");
    assert.equal(
      (await app.request(`/feeds/c/${credential}/squirrel/desk/darwin/1.0.0`)).status,
      200,
    );
    const forged = credential.slice(0, -1) + (credential.endsWith("0") ? "1" : "0");
    await assertError(
      await app.request(`/feeds/c/${forged}/squirrel/desk/darwin/1.0.0`),
      401,
      "invalid api key",
    );
    await assertError(
      await app.request("/feeds/c/nonsense/squirrel/desk/win32/1.0.0/RELEASES"),
      401,
      "invalid api key",
    );
    const noDownload = await seedKey(app, { can_download: false });
    await assertError(
      await app.request(
        `/feeds/c/${
          feedCredential(noDownload.apiKey.id, noDownload.secret)
        }/squirrel/desk/darwin/1.0.0`,
      ),
      403,
      "api key permission denied",
    );
    const winOnly = await seedKey(app, { scope_mode: "project_allow_list", project_ids: [win.id] });
    await assertError(
      await app.request(
        `/feeds/c/${feedCredential(winOnly.apiKey.id, winOnly.secret)}/squirrel/desk/darwin/1.0.0`,
      ),
      404,
      "resource not found",
    );
    assert.equal(
      (await app.request(
        `/feeds/c/${
          feedCredential(winOnly.apiKey.id, winOnly.secret)
        }/squirrel/desk/win32/1.0.0/RELEASES`,
      ))
        .status,
      200,
    );
    const revoked = await seedKey(app);
    const revokedUrl = `/feeds/c/${
      feedCredential(revoked.apiKey.id, revoked.secret)
    }/squirrel/desk/darwin/1.0.0`;
    assert.equal((await app.request(revokedUrl)).status, 200);
    await setApiKeyActive(app.store, revoked.apiKey.id, false);
    await assertError(await app.request(revokedUrl), 401, "invalid api key");
    await assertError(
      await app.request(macPath, secret, { method: "POST" }),
      405,
      "method not allowed",
    );
    await assertError(
      await app.request("/feeds/squirrel/desk/linux/1.0.0", secret),
      404,
      "resource not found",
    );
    await assertError(
      await app.request("/feeds/squirrel/desk/darwin/1.0.0/RELEASES", secret),
      404,
      "resource not found",
    );
  });

  await t.step("the key's credential: GET /feeds/url-credential", async () => {
    const res = await app.request("/feeds/url-credential", secret);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.credential, credential);
    assert.equal(pathOf(body.feeds_url), `/feeds/c/${credential}`);
    assert.ok(!credential.includes(secret) && !secret.includes(credential));
    // The form a vendor makes where the key is made (docs/feeds.md "A credential in the URL").
    const mac = createHmac("sha256", secret).update("velopack-feed").digest("hex").slice(0, 32);
    assert.equal(credential, `vk_${apiKey.id}_${mac}`);
    await assertError(await app.request("/feeds/url-credential"), 401, "missing bearer api key");
  });

  await t.step("the access log writes the credential as [redacted]", () => {
    const path = `/feeds/c/${credential}/squirrel/desk/win32/1.0.0/RELEASES`;
    assert.equal(
      redactUrlCredential(path),
      "/feeds/c/[redacted]/squirrel/desk/win32/1.0.0/RELEASES",
    );
    const record = accessLogRecord({
      startedMs: Date.now(),
      method: "GET",
      url: `http://localhost${path}?id=Desk`,
      status: 200,
      durationMs: 1,
      bytes: 1,
      client: "127.0.0.1",
      keyId: undefined,
      releaseId: undefined,
      userAgent: undefined,
      aborted: false,
    });
    assert.equal(record.path, "/feeds/c/[redacted]/squirrel/desk/win32/1.0.0/RELEASES");
    assert.ok(!JSON.stringify(record).includes(credential));
  });

  await t.step("percent-encoded credential URLs reach the feed and are redacted too", async () => {
    const encodedC = `/feeds/%63/${credential}/squirrel/desk/win32/1.0.0/RELEASES`;
    // The router decodes the path, so this is the credential URL.
    assert.equal((await app.request(encodedC)).status, 200);
    const encodedCredential = credential.replace("vk_", "%76k_").replace("_", "%5F");
    for (
      const path of [
        encodedC,
        `/%66eeds/c/${credential}/squirrel/desk/win32/1.0.0/RELEASES`,
        `/feeds/c/${encodedCredential}/squirrel/desk/win32/1.0.0/RELEASES`,
        `/feeds/%63/${encodedCredential}/squirrel/desk/win32/1.0.0/RELEASES`,
        `/feeds/x/${credential}/elsewhere`,
      ]
    ) {
      const logged = redactUrlCredential(path);
      assert.ok(logged.includes("[redacted]"), logged);
      assert.ok(!logged.includes(credential.slice(-32)), logged);
    }
    assert.equal(redactUrlCredential("/feeds/squirrel/desk/x"), "/feeds/squirrel/desk/x");
  });

  await t.step("KV (and so a backup) holds nothing a credential can be made from", async () => {
    const stored = JSON.stringify((await app.kv.get(apiKeyKey(apiKey.id))).value);
    // The credential the key's stored hash would give (what a backup holds) is refused.
    const fromHash = createHmac("sha256", apiKey.hash).update("velopack-feed").digest("hex")
      .slice(0, 32);
    const forged = `vk_${apiKey.id}_${fromHash}`;
    assert.notEqual(forged, credential);
    await assertError(
      await app.request(`/feeds/c/${forged}/squirrel/desk/darwin/1.0.0`),
      401,
      "invalid api key",
    );
    assert.ok(!stored.includes(credential.slice(-32)));
    assert.ok(apiKey.feed_mac_sha256 !== undefined);
  });

  await t.step("a key kept without its credential's hash gets it by asking once", async () => {
    const old = await seedKey(app);
    const { feed_mac_sha256: _, ...record } = old.apiKey;
    await app.kv.set(apiKeyKey(old.apiKey.id), record);
    const oldUrl = `/feeds/c/${
      feedCredential(old.apiKey.id, old.secret)
    }/squirrel/desk/darwin/1.0.0`;
    await assertError(await app.request(oldUrl), 401, "invalid api key");
    const res = await app.request("/feeds/url-credential", old.secret);
    assert.equal(res.status, 200);
    assert.equal((await res.json()).credential, feedCredential(old.apiKey.id, old.secret));
    assert.equal((await app.request(oldUrl)).status, 200);
  });
});

Deno.test("Electron's autoUpdater: rollout, testers, halt and rollback", async (t) => {
  await using app = await createTestApp();
  const mac = await seedProject(app, { slug: "roll-mac" });
  const win = await seedProject(app, { slug: "roll-win" });
  const stage = async (projectId: number, name: (v: string) => string) => {
    await seedRelease(app, projectId, "1.0.0", bytesOf("a"), { filename: name("1.0.0") });
    const next = await seedRelease(app, projectId, "2.0.0", bytesOf("b"), {
      filename: name("2.0.0"),
    });
    // The latest is 1.0.1; 2.0.0 is staged to testers only.
    await seedRelease(app, projectId, "1.0.1", bytesOf("c"), { filename: name("1.0.1") });
    await startRollout(app.store, next.id, { percentage: 0, tester_tag: "beta" });
  };
  await stage(mac.id, (v) => `Roll-${v}.zip`);
  await stage(win.id, (v) => `Roll-${v}-full.nupkg`);
  const everyone = await seedKey(app);
  const tester = await seedKey(app, { rollout_tags: ["beta"] });
  const macAsk = async (key: string, version: string) => {
    const res = await app.request(`/feeds/squirrel/roll/darwin/${version}`, key);
    if (res.status === 204) return null;
    assert.equal(res.status, 200);
    return (await res.json()).name as string;
  };
  const winAsk = async (key: string, version: string) => {
    const res = await app.request(`/feeds/squirrel/roll/win32/${version}/RELEASES`, key);
    assert.equal(res.status, 200);
    return parseReleaseEntry((await res.text()).trim()).version;
  };

  await t.step("a rollout offers its release to its testers only", async () => {
    assert.equal(await macAsk(everyone.secret, "1.0.0"), "1.0.1");
    assert.equal(await macAsk(everyone.secret, "1.0.1"), null);
    assert.equal(await macAsk(tester.secret, "1.0.1"), "2.0.0");
    assert.equal(await winAsk(everyone.secret, "1.0.0"), "1.0.1");
    assert.equal(await winAsk(tester.secret, "1.0.1"), "2.0.0");
  });

  await t.step("a halt stops the offer, and takes no one back", async () => {
    await changeRollout(app.store, mac.id, { halted: true });
    await changeRollout(app.store, win.id, { halted: true });
    assert.equal(await macAsk(tester.secret, "1.0.1"), null);
    assert.equal(await macAsk(tester.secret, "2.0.0"), null, "no downgrade without a rollback");
    assert.equal(await winAsk(tester.secret, "1.0.1"), "1.0.1");
    assert.equal(await winAsk(tester.secret, "2.0.0"), "2.0.0", "its own release: no change");
  });

  await t.step("a rollback takes the rolled-back version's clients back", async () => {
    await rollBack(app.store, mac.id);
    await rollBack(app.store, win.id);
    assert.equal(await macAsk(tester.secret, "2.0.0"), "1.0.1");
    assert.equal(await winAsk(tester.secret, "2.0.0"), "1.0.1");
    const res = await app.request("/feeds/squirrel/roll/darwin/2.0.0", tester.secret);
    assert.equal(res.headers.get("x-rolled-back"), "2.0.0");
    await res.body?.cancel();
    assert.equal(await macAsk(tester.secret, "1.0.1"), null);
  });

  await t.step("no older release for a client whose own release is gone", async () => {
    // A tester on a 2.5.0 this service does not have (no rollback names it): no listing at all.
    await assertError(
      await app.request("/feeds/squirrel/roll/win32/2.5.0/RELEASES", tester.secret),
      404,
      "release not found",
    );
    assert.equal(await macAsk(tester.secret, "2.5.0"), null);
  });
});

Deno.test("Squirrel.Windows: polls read the artifact once, downloads read no release index", async () => {
  const dir = await Deno.makeTempDir();
  const fs = createFsStore(dir);
  let opens = 0;
  const artifacts = new Proxy(fs, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      if (name === "open") {
        return (...args: unknown[]) => {
          opens++;
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
  let indexLists = 0;
  const wrapKv = (kv: Deno.Kv) =>
    new Proxy(kv, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== "function") return value;
        if (name === "list") {
          return (selector: { prefix?: Deno.KvKey }, ...rest: unknown[]) => {
            if (selector.prefix?.[0] === "releases_by_project") indexLists++;
            return value.call(target, selector, ...rest);
          };
        }
        return value.bind(target);
      },
    });
  try {
    await using app = await createTestApp({}, { artifacts, wrapKv });
    const win = await seedProject(app, { slug: "desk-win" });
    const bytes = bytesOf("win three ");
    await seedRelease(app, win.id, "1.0.0", bytesOf("win one "), {
      filename: "Desk-1.0.0-full.nupkg",
    });
    const release = await seedRelease(app, win.id, "3.0.0", bytes, {
      filename: "Desk-3.0.0-full.nupkg",
    });
    const { secret } = await seedKey(app);
    opens = 0;
    const polls = await Promise.all(
      Array.from(
        { length: 5 },
        () => app.request("/feeds/squirrel/desk/win32/1.0.0/RELEASES", secret),
      ),
    );
    for (let i = 0; i < 20; i++) {
      // Clients on 1.0.0 are offered 3.0.0; clients on 3.0.0 are listed their own release.
      const version = i % 2 === 0 ? "1.0.0" : "3.0.0";
      polls.push(await app.request(`/feeds/squirrel/desk/win32/${version}/RELEASES`, secret));
    }
    for (const res of polls) {
      assert.equal(res.status, 200);
      assert.equal(parseReleaseEntry((await res.text()).trim()).sha1.toLowerCase(), sha1(bytes));
    }
    assert.equal(opens, 1, "25 polls, one artifact read");
    // Kept in the release record: another instance (or a restart) reads no artifact either.
    const kept = (await app.kv.get<{ checksum_sha1?: string }>(["releases", release.id])).value;
    assert.equal(kept?.checksum_sha1, sha1(bytes));

    const file = "/feeds/squirrel/desk/win32/3.0.0/Desk-3.0.0-full.nupkg";
    assert.equal((await app.request(file, secret)).status, 200);
    const listsAfterFirst = indexLists;
    for (let i = 0; i < 10; i++) {
      const res = await app.request(file, secret, { method: "HEAD" });
      assert.equal(res.status, 200);
    }
    assert.equal(indexLists, listsAfterFirst, "no index scan after the first download");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
