/**
 * Signed Sparkle appcasts (docs/feeds.md "Signed Sparkle feeds"): the
 * vendor's key given on the admin page signs the appcast the way Sparkle
 * 2.9+ checks it with SURequireSignedFeed. The check here is written from
 * Sparkle's own code (SPUExtractSignedFeed.m: the last
 * `<!-- sparkle-signatures:\n`, its `edSignature:` and `length:` lines, the
 * bytes before it verified as Ed25519 under SUPublicEDKey), not from the
 * service's code.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { publishRelease } from "../src/storage/publish.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { seedKey, seedProject, sleep } from "./helpers.ts";

const PREFIX = new TextEncoder().encode("<!-- sparkle-signatures:\n");
const SUFFIX = new TextEncoder().encode("-->");
/** The DER header of an Ed25519 SubjectPublicKeyInfo, before the 32 raw bytes (RFC 8410). */
const SPKI_ED25519 = Buffer.from("302a300506032b6570032100", "hex");

function lastIndexOf(haystack: Uint8Array, needle: Uint8Array, from = haystack.length): number {
  for (let i = Math.min(from, haystack.length - needle.length); i >= 0; i--) {
    if (needle.every((byte, j) => haystack[i + j] === byte)) return i;
  }
  return -1;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  for (let i = from; i + needle.length <= haystack.length; i++) {
    if (needle.every((byte, j) => haystack[i + j] === byte)) return i;
  }
  return -1;
}

/** Whether `feed` verifies as Sparkle verifies a signed feed under `publicKeyBase64`. */
function sparkleVerifies(feed: Uint8Array, publicKeyBase64: string): boolean {
  const at = lastIndexOf(feed, PREFIX);
  if (at < 0) return false;
  const end = indexOf(feed, SUFFIX, at + PREFIX.length);
  if (end < 0) return false;
  const block = new TextDecoder("utf-8", { fatal: true }).decode(
    feed.subarray(at + PREFIX.length, end),
  );
  let signature: string | null = null;
  let length = 0;
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith("edSignature:")) signature = line.slice("edSignature:".length).trim();
    else if (line.startsWith("length:")) length = Number(line.slice("length:".length).trim());
  }
  const content = feed.subarray(0, at);
  // Sparkle checks the content's length against the block's (SPUVerifierInformation).
  if (signature === null || length !== content.length) return false;
  const key = createPublicKey({
    key: Buffer.concat([SPKI_ED25519, Buffer.from(publicKeyBase64, "base64")]),
    format: "der",
    type: "spki",
  });
  return verify(null, content, key, Buffer.from(signature, "base64"));
}

Deno.test("a project's appcast is signed with the vendor's Sparkle key", async (t) => {
  await using app = await createAdminTestApp({ baseUrl: "https://updates.example.test" });
  const project = await seedProject(app, { slug: "mac", name: "Mac App" });
  const bytes = new TextEncoder().encode("the app bundle");
  const edKey = generateKeyPairSync("ed25519");
  await publishRelease(app.store, app.artifacts, {
    release: {
      project_id: project.id,
      version: "2.0.0",
      build: "200",
      filename: "Mac.zip",
      sparkle_signature: Buffer.from(new Uint8Array(64).fill(7)).toString("base64"),
    },
    source: ReadableStream.from([bytes]),
    maxBytes: app.config.maxUploadBytes,
  });
  const { secret } = await seedKey(app);
  const admin = await signedInClient(app);
  // What Sparkle's generate_keys -x exports: the base64 of the 32-byte seed.
  const seed = Buffer.from(
    edKey.privateKey.export({ format: "jwk" }).d as string,
    "base64url",
  ).toString("base64");
  const publicKey = Buffer.from(
    edKey.publicKey.export({ format: "jwk" }).x as string,
    "base64url",
  ).toString("base64");
  const appcast = async () => {
    const res = await app.request("/feeds/sparkle/mac/appcast.xml", secret);
    assert.equal(res.status, 200);
    return new Uint8Array(await res.arrayBuffer());
  };

  await t.step("without a key the appcast is as before: no signature block", async () => {
    const feed = await appcast();
    assert.equal(lastIndexOf(feed, PREFIX), -1);
    assert.equal(sparkleVerifies(feed, publicKey), false);
  });

  await t.step("a bad key is refused on the page, with the reason", async () => {
    await admin.page("/admin/signing-keys");
    const res = await admin.post("/admin/sparkle-keys", {
      project: "mac",
      private_key: "not a key",
    });
    assert.equal(res.status, 303);
    const { html } = await admin.page("/admin/signing-keys");
    assert.match(html, /The Sparkle key was not saved: it is not base64/);
    const missing = await admin.post("/admin/sparkle-keys", { project: "nope", private_key: seed });
    assert.equal(missing.status, 303);
    assert.match(
      (await admin.page("/admin/signing-keys")).html,
      /There is no project &quot;nope&quot;|There is no project "nope"/,
    );
  });

  await t.step("given the key, the appcast verifies as Sparkle checks it", async () => {
    const res = await admin.post("/admin/sparkle-keys", {
      project: "mac",
      private_key: seed,
      bundle_identifier: "com.example.mac",
    });
    assert.equal(res.status, 303);
    const { html } = await admin.page("/admin/signing-keys");
    assert.ok(html.includes(publicKey), "the page shows the public key to compare");
    assert.ok(!html.includes(seed), "the page never shows the private key");
    // Another instance would read the key within seconds; this one has just written it.
    await sleep(5_100);
    const feed = await appcast();
    assert.ok(sparkleVerifies(feed, publicKey));
    const text = new TextDecoder().decode(feed);
    assert.match(text, /<sparkle:bundleIdentifier>com\.example\.mac<\/sparkle:bundleIdentifier>/);
    assert.match(text, /\n-->\n$/);
    // Not under another key.
    const other = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x as string;
    assert.equal(sparkleVerifies(feed, Buffer.from(other, "base64url").toString("base64")), false);
  });

  await t.step("one changed byte anywhere in the signed part fails the check", async () => {
    const feed = await appcast();
    const at = lastIndexOf(feed, PREFIX);
    for (const position of [0, Math.floor(at / 2), at - 1]) {
      const changed = feed.slice();
      changed[position] ^= 0x01;
      assert.equal(sparkleVerifies(changed, publicKey), false, `byte ${position}`);
    }
  });

  await t.step("removing the key ends the signing", async () => {
    const res = await admin.post("/admin/sparkle-keys/mac/remove");
    assert.equal(res.status, 303);
    await sleep(5_100);
    assert.equal(lastIndexOf(await appcast(), PREFIX), -1);
  });
});
