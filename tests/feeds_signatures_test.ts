/**
 * The Tauri and Sparkle feeds serve the signatures the vendor's build made:
 * Debian's `minisign` for Tauri, an Ed25519 key for Sparkle. The served
 * signature verifies over the downloaded bytes with an independent
 * implementation (node:crypto: Ed25519 over the BLAKE2b-512 prehash for
 * minisign, plain Ed25519 for Sparkle), and fails over tampered bytes.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync, sign, verify } from "node:crypto";
import { join } from "node:path";
import { sparkleSignature, tauriSignature } from "../src/feeds/signatures.ts";
import { publishRelease } from "../src/storage/publish.ts";
import { ValidationError } from "../src/kv/errors.ts";
import { createTestApp, seedKey, seedProject } from "./helpers.ts";
import { fromBase64, minisignVerifies } from "./signature_helpers.ts";

async function run(command: string, args: string[]) {
  const out = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" }).output();
  return { code: out.code, text: new TextDecoder().decode(out.stderr) };
}

Deno.test("tauri and sparkle signatures verify over the served file", async (t) => {
  await using app = await createTestApp();
  const dir = await Deno.makeTempDir();
  const bytes = Uint8Array.from({ length: 50_000 }, (_, i) => (i * 13) & 0xff);
  const file = join(dir, "App.app.tar.gz");
  await Deno.writeFile(file, bytes);
  const generated = await run("minisign", [
    "-G",
    "-W",
    "-p",
    `${dir}/key.pub`,
    "-s",
    `${dir}/key.sec`,
  ]);
  assert.equal(generated.code, 0, generated.text);
  const signed = await run("minisign", ["-S", "-s", `${dir}/key.sec`, "-m", file]);
  assert.equal(signed.code, 0, signed.text);
  const minisig = await Deno.readTextFile(`${file}.minisig`);
  const publicKeyFile = await Deno.readTextFile(`${dir}/key.pub`);
  const ed = generateKeyPairSync("ed25519");
  const edSignature = sign(null, bytes, ed.privateKey).toString("base64");

  const project = await seedProject(app, { slug: "app" });
  const release = await publishRelease(app.store, app.artifacts, {
    release: {
      project_id: project.id,
      version: "1.2.3",
      filename: "App.app.tar.gz",
      // Uploaded as minisign wrote it, and as sign_update prints it.
      tauri_signature: tauriSignature(minisig),
      sparkle_signature: sparkleSignature(`sparkle:edSignature="${edSignature}" length="50000"`),
    },
    source: ReadableStream.from([bytes]),
    maxBytes: app.config.maxUploadBytes,
  });
  const { secret } = await seedKey(app);
  const download = async (url: string) => {
    const res = await app.request(new URL(url).pathname, secret);
    assert.equal(res.status, 200);
    return new Uint8Array(await res.arrayBuffer());
  };
  const tampered = bytes.slice();
  tampered[7] ^= 1;

  await t.step("tauri: the served .sig verifies (node:crypto and minisign)", async () => {
    const feed = await (await app.request("/feeds/tauri/app/darwin/aarch64/1.0.0", secret)).json();
    assert.equal(feed.signature, release.tauri_signature);
    const served = new TextDecoder().decode(fromBase64(feed.signature));
    assert.equal(served, minisig.endsWith("\n") ? minisig : `${minisig}\n`);
    const got = await download(feed.url);
    assert.ok(minisignVerifies(publicKeyFile, served, got));
    assert.ok(!minisignVerifies(publicKeyFile, served, tampered), "a tampered file fails");
    await Deno.writeTextFile(`${dir}/served.minisig`, served);
    await Deno.writeFile(`${dir}/got`, got);
    const verifyGot = () =>
      run("minisign", [
        "-V",
        "-p",
        `${dir}/key.pub`,
        "-m",
        `${dir}/got`,
        "-x",
        `${dir}/served.minisig`,
      ]);
    const ok = await verifyGot();
    assert.equal(ok.code, 0, ok.text);
    await Deno.writeFile(`${dir}/got`, tampered);
    const bad = await verifyGot();
    assert.notEqual(bad.code, 0);
  });

  await t.step("sparkle: the served edSignature verifies over the enclosure", async () => {
    const xml = await (await app.request("/feeds/sparkle/app/appcast.xml", secret)).text();
    const [, url, signature] = /enclosure url="([^"]+)".*sparkle:edSignature="([^"]+)"/.exec(xml)!;
    const got = await download(url);
    assert.ok(verify(null, got, ed.publicKey, fromBase64(signature)));
    assert.ok(!verify(null, tampered, ed.publicKey, fromBase64(signature)));
  });

  await t.step("signatures not in their form are clear errors", () => {
    assert.throws(() => tauriSignature("not a signature"), ValidationError);
    assert.throws(() => sparkleSignature("AAAA"), ValidationError);
    assert.equal(tauriSignature("  "), undefined);
  });
  await Deno.remove(dir, { recursive: true });
});
