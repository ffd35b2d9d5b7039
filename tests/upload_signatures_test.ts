/**
 * Issue 26 items 3 and 4 from the uploader's side: a Tauri `.sig` and a
 * Sparkle EdDSA signature uploaded through the admin form (both upload
 * routes), the publishing API and the reference client's `publish`
 * (`--tauri-signature-file`, `--sparkle-signature`) are what the Tauri feed's
 * `signature` and the appcast's `sparkle:edSignature` serve, and they verify
 * over the downloaded bytes. A signature that is malformed or oversized is a
 * clear error (400 JSON from the API, the form shown again, a refusal from
 * the client) and stores nothing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { listReleasesByProject } from "../src/releases/releases.ts";
import { createTestApp, seedKey, seedProject, type TestApp } from "./helpers.ts";
import {
  createAdminTestApp,
  listArtifactFiles,
  randomBytes,
  signedInClient,
} from "./admin_helpers.ts";
import { PUBLISH_PREFIX, seedPublishToken, uploadForm } from "./publish_helpers.ts";
import { makeDataTempDir, runTask, startServer } from "./server_process.ts";
import {
  fromBase64,
  minisignVerifies,
  type VendorSignatures,
  vendorSignatures,
} from "./signature_helpers.ts";
import { openDataDir } from "./data_dir_fixtures.ts";

/** Sends a request to the app under test (in process or over HTTP) with a client key. */
type Get = (path: string) => Promise<Response>;

/**
 * The Tauri feed and the appcast serve the uploaded signatures for `version`,
 * and both verify over the bytes the feed's URL downloads.
 */
async function assertFeedsServe(
  get: Get,
  { slug, version, signatures, bytes }: {
    slug: string;
    version: string;
    signatures: VendorSignatures;
    bytes: Uint8Array;
  },
): Promise<void> {
  const tauriRes = await get(`/feeds/tauri/${slug}/darwin/aarch64/0.0.1`);
  assert.equal(tauriRes.status, 200, await tauriRes.clone().text());
  const tauri = await tauriRes.json();
  assert.equal(tauri.version, version);
  assert.equal(tauri.signature, signatures.tauriSig, "the .sig as the bundler wrote it");
  const served = new TextDecoder().decode(fromBase64(tauri.signature));
  assert.equal(served, signatures.minisign);
  const file = await get(new URL(tauri.url).pathname);
  assert.equal(file.status, 200);
  const got = new Uint8Array(await file.arrayBuffer());
  assert.deepEqual(got, bytes);
  assert.ok(minisignVerifies(signatures.minisignPublicKey, served, got), "the .sig verifies");
  const tampered = got.slice();
  tampered[3] ^= 1;
  assert.ok(!minisignVerifies(signatures.minisignPublicKey, served, tampered));

  const appcast = await get(`/feeds/sparkle/${slug}/appcast.xml`);
  assert.equal(appcast.status, 200);
  const xml = await appcast.text();
  const [, url, edSignature] = /enclosure url="([^"]+)".*sparkle:edSignature="([^"]+)"/s.exec(
    xml,
  ) ?? [];
  assert.ok(url !== undefined, xml);
  assert.match(xml, new RegExp(`<sparkle:version>${version.replaceAll(".", "\\.")}<`));
  assert.equal(edSignature, signatures.edSignature);
  const enclosure = new Uint8Array(await (await get(new URL(url).pathname)).arrayBuffer());
  assert.ok(signatures.sparkleVerifies(edSignature, enclosure), "the edSignature verifies");
  assert.ok(!signatures.sparkleVerifies(edSignature, tampered));
}

/** Release count and artifact files: what a refused upload must leave as it found them. */
async function storedState(app: TestApp, projectId: number) {
  return {
    releases: (await listReleasesByProject(app.store, projectId)).length,
    files: await listArtifactFiles(app),
  };
}

/** Signature fields an upload must refuse, each with the message it answers. */
function badSignatures(signatures: VendorSignatures): Array<{
  name: string;
  fields: Record<string, string>;
  message: RegExp;
}> {
  return [
    {
      name: "a malformed .sig",
      fields: { tauri_signature: "not a signature" },
      message: /tauri_signature must be the \.sig file/,
    },
    {
      name: "a .sig of something else (base64, not a minisign file)",
      fields: { tauri_signature: btoa("untrusted comment: x\nRWQ=\n") },
      message: /tauri_signature must be the \.sig file/,
    },
    {
      name: "an oversized .sig (8 KiB)",
      fields: { tauri_signature: signatures.tauriSig + "A".repeat(8192) },
      message: /tauri_signature must be the \.sig file/,
    },
    {
      name: "a .sig larger than a form field may be (600 KiB)",
      fields: { tauri_signature: "A".repeat(600 * 1024) },
      message: /a form field is larger than 524288 bytes/,
    },
    {
      name: "an EdDSA signature of the wrong length",
      fields: { sparkle_signature: btoa("x".repeat(63)) },
      message: /sparkle_signature must be the base64 EdDSA signature/,
    },
    {
      name: "an oversized EdDSA signature",
      fields: { sparkle_signature: signatures.edSignature.repeat(40) },
      message: /sparkle_signature must be the base64 EdDSA signature/,
    },
    {
      name: "a sign_update line with a malformed signature",
      fields: { sparkle_signature: 'sparkle:edSignature="abc!" length="5"' },
      message: /sparkle_signature must be the base64 EdDSA signature/,
    },
  ];
}

Deno.test("signatures uploaded through the admin form are served by the feeds", async (t) => {
  await using app = await createAdminTestApp();
  const project = await seedProject(app, { slug: "app" });
  await seedProject(app, { slug: "other" });
  const { secret } = await seedKey(app);
  const get: Get = (path) => app.request(path, secret);
  const admin = await signedInClient(app);
  await admin.page("/admin/projects/app");
  const bytes = randomBytes(70_000);
  const signatures = vendorSignatures(bytes, "App.app.tar.gz");
  const file = () => new File([bytes as Uint8Array<ArrayBuffer>], "App.app.tar.gz");

  await t.step("the project's form: the .sig text and sign_update's line", async () => {
    const res = await admin.upload("/admin/projects/app/releases", [
      ["csrf_token", admin.csrfToken],
      ["version", "1.0.0"],
      ["tauri_signature", `${signatures.tauriSig}\r\n`],
      ["sparkle_signature", `sparkle:edSignature="${signatures.edSignature}" length="70000"`],
      ["file", file()],
    ]);
    assert.equal(res.status, 303, await res.text());
    await assertFeedsServe(get, { slug: "app", version: "1.0.0", signatures, bytes });
  });

  await t.step("the dashboard's form (/admin/upload): the minisign file itself", async () => {
    const other = vendorSignatures(bytes, "App.app.tar.gz");
    const res = await admin.upload("/admin/upload", [
      ["csrf_token", admin.csrfToken],
      ["project", "other"],
      ["version", "2.0.0"],
      ["tauri_signature", other.minisign],
      ["sparkle_signature", other.edSignature],
      ["file", file()],
    ]);
    assert.equal(res.status, 303, await res.text());
    await assertFeedsServe(get, { slug: "other", version: "2.0.0", signatures: other, bytes });
  });

  await t.step("a bad signature shows the form again with the error; nothing stored", async () => {
    const before = await storedState(app, project.id);
    for (const bad of badSignatures(signatures)) {
      for (const path of ["/admin/projects/app/releases", "/admin/upload"]) {
        const res = await admin.upload(path, [
          ["csrf_token", admin.csrfToken],
          ...(path === "/admin/upload" ? [["project", "app"] as [string, string]] : []),
          ["version", "3.0.0"],
          ...Object.entries(bad.fields),
          ["file", file()],
        ]);
        const html = await res.text();
        assert.equal(res.status, 400, `${bad.name} at ${path}`);
        assert.match(html, /<form/, `${bad.name} at ${path}: the form again`);
        // The form names the field by its label, the API by its name.
        const labelled = bad.message.source.replace("tauri_signature", "Tauri signature")
          .replace("sparkle_signature", "Sparkle EdDSA signature");
        assert.match(html, new RegExp(labelled), `${bad.name} at ${path}`);
        assert.doesNotMatch(html, /(tauri|sparkle)_signature must/, `${bad.name} at ${path}`);
        assert.match(html, /value="3\.0\.0"/, "what was entered is kept");
      }
    }
    assert.deepEqual(await storedState(app, project.id), before);
    const tauri = await (await get("/feeds/tauri/app/darwin/aarch64/0.0.1")).json();
    assert.equal(tauri.version, "1.0.0", "the feed still serves the signed release");
  });
});

Deno.test("signatures uploaded through the publishing API are served by the feeds", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const { secret } = await seedKey(app);
  const { secret: token } = await seedPublishToken(app.store);
  const get: Get = (path) => app.request(path, secret);
  const bytes = randomBytes(90_000);
  const signatures = vendorSignatures(bytes, "App.app.tar.gz");
  const upload = (fields: Record<string, string>) =>
    app.request(`${PUBLISH_PREFIX}/projects/app/releases`, token, {
      method: "POST",
      body: uploadForm(fields, { bytes, name: "App.app.tar.gz" }),
    });

  await t.step("201, and the feeds serve them", async () => {
    const res = await upload({
      version: "1.0.0",
      tauri_signature: signatures.tauriSig,
      sparkle_signature: signatures.edSignature,
    });
    assert.equal(res.status, 201, await res.clone().text());
    await res.body?.cancel();
    await assertFeedsServe(get, { slug: "app", version: "1.0.0", signatures, bytes });
  });

  await t.step("a bad signature: 400 JSON naming the field; nothing stored", async () => {
    const before = await storedState(app, project.id);
    for (const bad of badSignatures(signatures)) {
      const res = await upload({ version: "2.0.0", ...bad.fields });
      assert.equal(res.status, 400, bad.name);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      const body = await res.json();
      assert.match(body.error, bad.message, bad.name);
    }
    assert.deepEqual(await storedState(app, project.id), before);
  });
});

Deno.test("signatures uploaded by the reference client's publish are served by the feeds", async (t) => {
  const dataDir = await makeDataTempDir("upload-signatures");
  await using server = await startServer(dataDir);
  const fx = await openDataDir(dataDir);
  const { store } = fx;
  const work = await Deno.makeTempDir({ prefix: "upload-signatures-" });
  try {
    const project = await fx.project({ name: "App", slug: "app" });
    const { secret: token } = await seedPublishToken(store);
    const { secret } = await fx.key({ name: "c" });
    const get: Get = (path) =>
      fetch(server.baseUrl + path, { headers: { authorization: `Bearer ${secret}` } });
    const bytes = randomBytes(120_000);
    await Deno.writeFile(join(work, "App.app.tar.gz"), bytes);
    const signatures = vendorSignatures(bytes, "App.app.tar.gz");
    await Deno.writeTextFile(join(work, "App.app.tar.gz.sig"), signatures.tauriSig);
    const publish = (version: string, extra: string[]) =>
      runTask([
        "client",
        "publish",
        "--base-url",
        server.baseUrl,
        "--project",
        "app",
        "--version",
        version,
        "--file",
        "App.app.tar.gz",
        ...extra,
      ], { UPDATE_PUBLISH_TOKEN: token, INIT_CWD: work });

    await t.step("--tauri-signature-file and --sparkle-signature", async () => {
      const res = await publish("1.0.0", [
        "--tauri-signature-file",
        "App.app.tar.gz.sig",
        "--sparkle-signature",
        signatures.edSignature,
      ]);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(JSON.parse(res.stdout).release.version, "1.0.0");
      await assertFeedsServe(get, { slug: "app", version: "1.0.0", signatures, bytes });
    });

    await t.step("a bad signature is refused with the service's message", async () => {
      const before = (await listReleasesByProject(store, project.id)).length;
      await Deno.writeTextFile(join(work, "bad.sig"), "not a signature");
      const cases: Array<[string[], RegExp]> = [
        [["--tauri-signature-file", "bad.sig"], /400 tauri_signature: tauri_signature must be/],
        [["--sparkle-signature", "AAAA"], /400 sparkle_signature: sparkle_signature must be/],
      ];
      for (const [extra, message] of cases) {
        const res = await publish("2.0.0", extra);
        assert.equal(res.code, 11, res.stderr);
        assert.match(res.stderr, message);
        assert.equal(res.stdout, "");
      }
      const missing = await publish("2.0.0", ["--tauri-signature-file", "missing.sig"]);
      assert.equal(missing.code, 9, missing.stderr);
      assert.match(missing.stderr, /cannot read the Tauri signature file/);
      assert.equal((await listReleasesByProject(store, project.id)).length, before);
    });
  } finally {
    fx.close();
    await server.stop();
    await Deno.remove(work, { recursive: true });
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
