/**
 * The updater feeds under /feeds (docs/feeds.md), in process: electron-updater's
 * YAML, Tauri's JSON and Sparkle's appcast answer the latest release with the
 * client API's protection; the file route is the API's download.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { parse } from "yaml";
import { runSha512Backfill } from "../src/feeds/backfill.ts";
import { claimLease, releaseLease } from "../src/kv/leases.ts";
import { createProject } from "../src/projects/projects.ts";
import { createRelease } from "../src/releases/releases.ts";
import { publishRelease } from "../src/storage/publish.ts";
import { assertError, assertProtectedHeaders, assertSecurityHeaders, readJson } from "./asserts.ts";
import {
  createTestApp,
  downloadCount,
  seedKey,
  seedProject,
  seedRelease,
  type TestApp,
} from "./helpers.ts";

const sha512 = (bytes: Uint8Array) => createHash("sha512").update(bytes).digest("base64");

/** A release with updater signatures, uploaded like the admin form does. */
function signedRelease(t: TestApp, projectId: number, bytes: Uint8Array, extra: {
  version: string;
  tauri_signature?: string;
  sparkle_signature?: string;
  release_notes?: string;
  build?: string;
  filename?: string;
}) {
  return publishRelease(t.store, t.artifacts, {
    release: { project_id: projectId, filename: `App ${extra.version}.exe`, ...extra },
    source: ReadableStream.from([bytes]),
    maxBytes: t.config.maxUploadBytes,
  });
}

Deno.test("electron-updater feed", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop", tags: ["win"] });
  const other = await seedProject(app, { slug: "other" });
  const bytes = new TextEncoder().encode("installer bytes ".repeat(1000));
  await seedRelease(app, project.id, "0.9.0", new Uint8Array(5));
  const release = await signedRelease(app, project.id, bytes, {
    version: "1.10.0",
    release_notes: "Fixes: a & b <c>",
  });
  const { secret } = await seedKey(app);

  await t.step("the upload computed SHA-512 (base64) beside SHA-256", () => {
    assert.equal(release.checksum_sha512, sha512(bytes));
  });

  await t.step("every name electron-updater asks for answers the latest release", async () => {
    for (const name of ["latest", "latest-mac", "latest-linux", "latest-linux-arm64", "beta"]) {
      const res = await app.request(`/feeds/electron/desktop/${name}.yml`, secret);
      assert.equal(res.status, 200, name);
      assert.equal(res.headers.get("content-type"), "text/yaml; charset=utf-8");
      assertProtectedHeaders(res);
      assertSecurityHeaders(res);
      const text = await res.text();
      const feed = parse(text);
      const url = "/feeds/electron/desktop/files/1.10.0/App%201.10.0.exe";
      assert.deepEqual(feed, {
        version: "1.10.0",
        files: [{ url, sha512: sha512(bytes), size: bytes.byteLength }],
        path: url,
        sha512: sha512(bytes),
        releaseDate: release.created_at,
        releaseNotes: "Fixes: a & b <c>",
      });
      assert.match(text, /^version: '1\.10\.0'$/m, "versions stay strings in YAML 1.1");
      assert.ok(!("stagingPercentage" in feed), "no staged rollout: every client is offered it");
    }
  });

  await t.step("HEAD answers the headers", async () => {
    const res = await app.request("/feeds/electron/desktop/latest.yml", secret, { method: "HEAD" });
    assert.equal(res.status, 200);
    assert.ok(Number(res.headers.get("content-length")) > 100);
  });

  await t.step("the key rules of the client API: 401, 403, scope 404, 405", async () => {
    const path = "/feeds/electron/desktop/latest.yml";
    const missing = await app.request(path);
    assertProtectedHeaders(missing);
    assert.match(missing.headers.get("www-authenticate") ?? "", /^Bearer realm=/);
    await assertError(missing, 401, "missing bearer api key");
    await assertError(await app.request(path, "uds_nope"), 401, "invalid api key");
    const noDownload = await seedKey(app, { can_download: false });
    await assertError(await app.request(path, noDownload.secret), 403, "api key permission denied");
    const scoped = await seedKey(app, {
      scope_mode: "project_allow_list",
      project_ids: [other.id],
    });
    await assertError(await app.request(path, scoped.secret), 404, "resource not found");
    const file = `/feeds/files/${release.id}/App%201.10.0.exe`;
    await assertError(await app.request(file, scoped.secret), 404, "resource not found");
    await assertError(
      await app.request(path, secret, { method: "POST" }),
      405,
      "method not allowed",
    );
    await assertError(
      await app.request("/feeds/electron/desktop/latest.json", secret),
      404,
      "resource not found",
    );
    await assertError(await app.request("/feeds/nope", secret), 404, "resource not found");
    await assertError(
      await app.request("/feeds/electron/other/latest.yml", secret),
      404,
      "release not found",
    );
  });

  await t.step("the file: the API's download, counted, with Range and ETag", async () => {
    const file = `/feeds/files/${release.id}/App%201.10.0.exe`;
    const res = await app.request(file, secret);
    assert.equal(res.status, 200);
    assertProtectedHeaders(res);
    assert.equal(res.headers.get("etag"), `"${release.checksum_sha256}"`);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
    assert.equal(await downloadCount(app.store, release.id), 1);
    const part = await app.request(file, secret, { headers: { range: "bytes=0-9" } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get("content-range"), `bytes 0-9/${bytes.byteLength}`);
    assert.deepEqual(new Uint8Array(await part.arrayBuffer()), bytes.subarray(0, 10));
    const head = await app.request(file, secret, { method: "HEAD" });
    assert.equal(head.headers.get("content-length"), String(bytes.byteLength));
    assert.equal(await downloadCount(app.store, release.id), 1, "probes do not count");
    await assertError(
      await app.request(`/feeds/files/${release.id}/other.exe`, secret),
      404,
      "resource not found",
    );
    await assertError(await app.request(`/feeds/files/x/a.exe`, secret), 400, "invalid release id");
  });

  await t.step("a release stored before SHA-512: a clear 503 until the backfill", async () => {
    const old = await createProject(app.store, { name: "Old", slug: "old" });
    const stored = await app.artifacts.save(ReadableStream.from([bytes]), 1 << 20);
    await createRelease(app.store, {
      project_id: old.id,
      version: "1.0.0",
      filename: "old.exe",
      storage_key: stored.storage_key,
      checksum_sha256: stored.checksum_sha256,
      size_bytes: stored.size_bytes,
    });
    app.artifacts.settle?.(stored.storage_key);
    const res = await app.request("/feeds/electron/old/latest.yml", secret);
    assert.equal(res.headers.get("retry-after"), "60");
    await assertError(res, 503, "release sha512 not computed yet, try again later");

    // Another instance holds the lease: this one waits.
    assert.ok(await claimLease(app.store, "sha512_backfill", { holder: "other", ttlMs: 60_000 }));
    const events: string[] = [];
    const options = {
      store: app.store,
      artifacts: app.artifacts,
      report: (_: string, message: string) => events.push(message),
    };
    assert.equal((await runSha512Backfill(options, "me")).outcome, "busy");
    await releaseLease(app.store, "sha512_backfill", { holder: "other" });
    assert.deepEqual(await runSha512Backfill(options, "me"), {
      outcome: "done",
      filled: 1,
      skipped: 0,
    });
    assert.deepEqual(events, ["sha512 backfill done"]);
    const feed = parse(await (await app.request("/feeds/electron/old/latest.yml", secret)).text());
    assert.equal(feed.sha512, sha512(bytes));
    // Done once: a later run reads nothing.
    assert.deepEqual(await runSha512Backfill(options, "me"), {
      outcome: "done",
      filled: 0,
      skipped: 0,
    });
  });
});

Deno.test("tauri and sparkle feeds", async (t) => {
  await using app = await createTestApp({ baseUrl: "https://updates.example.test" });
  const project = await seedProject(app, { slug: "mac-app", name: `Mac "App" & <Co>` });
  const unsigned = await seedProject(app, { slug: "unsigned" });
  await seedRelease(app, unsigned.id, "1.0.0");
  const bytes = new TextEncoder().encode("bundle");
  const release = await signedRelease(app, project.id, bytes, {
    version: "2.0.0",
    build: "200",
    release_notes: "<b>bold</b> & 'quotes'",
    filename: "App.tar.gz",
    tauri_signature: btoa("untrusted comment: x\nRWQ=\ntrusted comment: y\nAA==\n"),
    sparkle_signature: btoa(String.fromCharCode(...new Uint8Array(64).fill(7))),
  });
  const { secret } = await seedKey(app);
  const url = `https://updates.example.test/feeds/files/${release.id}/App.tar.gz`;

  await t.step("tauri: the latest release, whatever the current version", async () => {
    const body = await readJson(
      await app.request("/feeds/tauri/mac-app/darwin/aarch64/9.9.9", secret),
      200,
    );
    assert.deepEqual(body, {
      version: "2.0.0",
      notes: "<b>bold</b> & 'quotes'",
      pub_date: release.created_at,
      url,
      signature: release.tauri_signature,
    });
  });

  await t.step("tauri: a release without its signature is a JSON error naming it", async () => {
    const res = await app.request("/feeds/tauri/unsigned/linux/x86_64/0.1.0", secret);
    assertProtectedHeaders(res);
    await assertError(res, 409, "release has no tauri signature");
    await assertError(
      await app.request("/feeds/tauri/mac-app/linux/x86_64/0.1.0"),
      401,
      "missing bearer api key",
    );
  });

  await t.step("sparkle: the appcast, every value escaped", async () => {
    const res = await app.request("/feeds/sparkle/mac-app/appcast.xml", secret);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/xml; charset=utf-8");
    assertProtectedHeaders(res);
    const xml = await res.text();
    assert.ok(xml.startsWith('<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"'));
    assert.match(xml, /<title>Mac &quot;App&quot; &amp; &lt;Co&gt;<\/title>/);
    assert.match(xml, /<sparkle:version>200<\/sparkle:version>/);
    assert.match(xml, /<sparkle:shortVersionString>2\.0\.0<\/sparkle:shortVersionString>/);
    assert.match(
      xml,
      /<description>&lt;b&gt;bold&lt;\/b&gt; &amp; &apos;quotes&apos;<\/description>/,
    );
    assert.match(xml, /<pubDate>\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000<\/pubDate>/);
    const enclosure =
      /<enclosure url="([^"]+)" length="(\d+)" type="([^"]+)" sparkle:edSignature="([^"]+)"\/>/
        .exec(xml);
    assert.ok(enclosure, xml);
    assert.equal(enclosure[1], url);
    assert.equal(enclosure[2], String(bytes.byteLength));
    assert.equal(enclosure[4], release.sparkle_signature);
    // Outside the markup, no raw `<`, `&` or quote survives in a value.
    const text = xml.replace(/<[^<>]*>/g, "");
    assert.ok(!/[<>]|&(?!(amp|lt|gt|quot|apos);)/.test(text), text);
  });

  await t.step("sparkle: a release without its signature is a JSON error naming it", async () => {
    await assertError(
      await app.request("/feeds/sparkle/unsigned/appcast.xml", secret),
      409,
      "release has no sparkle signature",
    );
  });
});
