/**
 * The offline root (docs/signing.md "Offline root"), end to end: the tool
 * makes a root key and signs the key set off the server, an admin uploads the
 * document, the service serves it, and the CLI pinned to the root accepts
 * keys it never saw (a whole missed rotation) while refusing a document that
 * is unsigned, tampered, signed by another root or expired.
 */
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, verify } from "node:crypto";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { run as signKeySet } from "../tools/sign_key_set.ts";
import { createKeyFiles } from "../src/signing/key_files.ts";
import { signRootDocument } from "../src/signing/root.ts";
import { createAdminUser } from "../src/accounts/admin_users.ts";
import { setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import { hashPassword } from "../src/lib/passwords.ts";
import { AdminClient } from "./admin_helpers.ts";
import { addActiveSigningKey } from "./helpers.ts";
import { startPinnedService } from "./signing_fixtures.ts";

const CHECK = ["check", "--project", "app", "--current", "1.0.0"];

Deno.test("the CLI pinned to an offline root follows a rotation it never saw", async (t) => {
  await using service = await startPinnedService();
  const { app } = service;
  await createAdminUser(app.store, "owner", await hashPassword("owner password 123"));
  const admin = new AdminClient(app);
  assert.equal((await admin.signIn("owner", "owner password 123")).status, 303);
  const dir = await Deno.makeTempDir({ prefix: "uds-root-" });
  const rootFile = join(dir, "root.pem");
  const keySetFile = join(dir, "keys.json");
  const documentFile = join(dir, "root.json");
  // `--pin-root=KEY`: a base64url key may start with "-", which a separate argument would not allow.
  const pinRoot = (root: string) => service.client([...CHECK, `--pin-root=${root}`]);
  const upload = async (text: string) => {
    await admin.page("/admin/signing-keys");
    const res = await admin.post("/admin/signing-root", { root_document: text });
    assert.equal(res.status, 303);
    return (await admin.page("/admin/signing-keys")).html;
  };
  const signCurrentSet = async () => {
    await Deno.writeTextFile(keySetFile, await service.keySetText());
    await signKeySet(["sign", "--root", rootFile, "--key-set", keySetFile, "--out", documentFile]);
    return await Deno.readTextFile(documentFile);
  };

  try {
    const made = await signKeySet(["new-root", "--out", rootFile]);
    const root = /pin it with --pin-root\): (\S+)/.exec(made)![1];
    const otherFile = join(dir, "other.pem");
    const other = /pin it with --pin-root\): (\S+)/.exec(
      await signKeySet(["new-root", "--out", otherFile]),
    )![1];

    await t.step(
      "the tool keeps the root private (0600) and signs what Node verifies",
      async () => {
        assert.equal((await Deno.stat(rootFile)).mode! & 0o777, 0o600);
        assert.match(await signKeySet(["public", "--root", rootFile]), new RegExp(root));
        const document = JSON.parse(await signCurrentSet());
        const publicKey = createPublicKey(createPrivateKey(await Deno.readTextFile(rootFile)));
        assert.ok(verify(
          null,
          Buffer.from(`uds-root-v1\n${document.payload}`),
          publicKey,
          Buffer.from(document.signatures[0].sig, "base64url"),
        ));
        const payload = JSON.parse(Buffer.from(document.payload, "base64url").toString());
        assert.deepEqual(
          payload.keys.map((k: { kid: string }) => k.kid),
          JSON.parse(await Deno.readTextFile(keySetFile)).keys.map((k: { kid: string }) => k.kid),
        );
        assert.ok(payload.expires - payload.signed_at === 90 * 86_400);
      },
    );

    await t.step("before any upload the pinned client refuses (12)", async () => {
      assert.equal((await app.request("/.well-known/uds-keys-root.json")).status, 404);
      const res = await pinRoot(root);
      assert.equal(res.code, 12, res.stderr);
      assert.match(res.stderr, /publishes no root-signed key set/);
    });

    await t.step(
      "an admin uploads the document; the service serves it; the client verifies",
      async () => {
        const html = await upload(await signCurrentSet());
        assert.match(html, /The root document was saved: it vouches for k[0-9a-f]{16}/);
        assert.match(html, /data-signing-root/);
        const served = await app.request("/.well-known/uds-keys-root.json");
        assert.equal(served.status, 200);
        assert.ok(served.headers.get("uds-signature"), "served signed like the key set");
        const res = await pinRoot(root);
        assert.equal(res.code, 10, res.stderr);
        service.mode = "flip";
        const flipped = await pinRoot(root);
        service.mode = "pass";
        assert.equal(flipped.code, 12, flipped.stderr);
      },
    );

    await t.step("a malformed upload is refused and the stored document kept", async () => {
      const before = await (await app.request("/.well-known/uds-keys-root.json")).text();
      const html = await upload('{"payload": "not json"}');
      assert.match(html, /The root document was not saved/);
      assert.equal(await (await app.request("/.well-known/uds-keys-root.json")).text(), before);
    });

    await t.step("another root, or a tampered payload, is refused (12)", async () => {
      const wrong = await pinRoot(other);
      assert.equal(wrong.code, 12, wrong.stderr);
      assert.match(wrong.stderr, /no signature of a pinned root key verifies/);
      // Two pinned roots (a root rotation): either one's signature is enough.
      const either = await service.client([...CHECK, `--pin-root=${other}`, `--pin-root=${root}`]);
      assert.equal(either.code, 10, either.stderr);
      // A hostile server adds its own key to the payload but cannot re-sign it.
      const genuine = JSON.parse(await Deno.readTextFile(documentFile));
      const payload = JSON.parse(Buffer.from(genuine.payload, "base64url").toString());
      const evil = await createKeyFiles(join(dir, "evil"));
      payload.keys.push({ kid: evil.kid, alg: "Ed25519", public_key: evil.publicKey });
      const forged = {
        ...genuine,
        payload: Buffer.from(JSON.stringify(payload)).toString("base64url"),
      };
      await upload(JSON.stringify(forged));
      const res = await pinRoot(root);
      assert.equal(res.code, 12, res.stderr);
      assert.match(res.stderr, /no signature of a pinned root key verifies/);
    });

    await t.step("a whole rotation the client never saw, then re-signed: accepted", async () => {
      await upload(await signCurrentSet());
      const oldKids = JSON.parse(await service.keySetText()).keys.map((k: { kid: string }) =>
        k.kid
      );
      const nextKid = await addActiveSigningKey(app);
      for (const kid of oldKids) {
        await setSigningKeyStatus(app.store, { kid, status: "retired", keepOneActive: true });
      }
      await app.signer.reload();
      // The document still lists only the old key: the new key's answers are refused...
      const stale = await pinRoot(root);
      assert.equal(stale.code, 12, stale.stderr);
      assert.match(stale.stderr, /no signature of a pinned key verifies/);
      // ...until the operator signs the new set off the server and uploads it.
      const html = await upload(await signCurrentSet());
      assert.match(html, new RegExp(`vouches for ${nextKid}`));
      const res = await pinRoot(root);
      assert.equal(res.code, 10, res.stderr);
    });

    await t.step("an upload that misses the active key is saved with a warning", async () => {
      const html = await upload(JSON.stringify(signRootDocument({
        keys: [],
        rootKey: createPrivateKey(await Deno.readTextFile(rootFile)),
        rootKid: /root key id: (\S+)/.exec(await signKeySet(["public", "--root", rootFile]))![1],
        days: 1,
      })));
      assert.match(html, /does not list the active key/);
    });

    await t.step("an expired root document is refused (12)", async () => {
      const keys = JSON.parse(await service.keySetText()).keys;
      const rootKey = createPrivateKey(await Deno.readTextFile(rootFile));
      const rootKid =
        /root key id: (\S+)/.exec(await signKeySet(["public", "--root", rootFile]))![1];
      await upload(JSON.stringify(signRootDocument({
        keys,
        rootKey,
        rootKid,
        days: 1,
        nowMs: Date.now() - 2 * 86_400_000,
      })));
      const res = await pinRoot(root);
      assert.equal(res.code, 12, res.stderr);
      assert.match(res.stderr, /the root-signed key set expired at \d{4}-/);
    });

    await t.step("a bad --pin-root is a usage error", async () => {
      const res = await pinRoot("not-a-key");
      assert.equal(res.code, 2, res.stderr);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
