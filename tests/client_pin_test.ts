/**
 * The CLI's `--pin-key-set FILE` (docs/signing.md "The reference client"):
 * a client installed with the key set of its day verifies every answer, moves
 * its pin on through a rotation signed by a key it trusts, and exits 12 with
 * a clear message on a tampered, expired or unverifiable answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import { addActiveSigningKey } from "./helpers.ts";
import { startPinnedService } from "./signing_fixtures.ts";

const CHECK = ["check", "--project", "app", "--current", "1.0.0"];

Deno.test("the CLI pinned to a key set verifies answers and follows a rotation", async (t) => {
  await using service = await startPinnedService();
  const { app } = service;
  const dir = await Deno.makeTempDir({ prefix: "uds-pin-" });
  const pin = join(dir, "keys.json");
  const stale = join(dir, "stale-keys.json");
  const installed = await service.keySetText();
  const oldKids: string[] = JSON.parse(installed).keys.map((k: { kid: string }) => k.kid);
  await Deno.writeTextFile(pin, installed);
  await Deno.writeTextFile(stale, installed);

  try {
    await t.step("genuine answers verify: check and download work", async () => {
      const check = await service.client([...CHECK, "--pin-key-set", pin]);
      assert.equal(check.code, 10, check.stderr);
      assert.match(check.stdout, /update available: 1\.0\.0 -> 2\.0\.0/);
      const out = join(dir, "app.bin");
      const download = await service.client([
        "download",
        "--project",
        "app",
        "--out",
        out,
        "--pin-key-set",
        pin,
      ]);
      assert.equal(download.code, 0, download.stderr);
      assert.ok((await Deno.stat(out)).size > 0);
    });

    await t.step("a flipped body byte exits 12 and says why", async () => {
      service.mode = "flip";
      const res = await service.client([...CHECK, "--pin-key-set", pin]);
      service.mode = "pass";
      assert.equal(res.code, 12, res.stderr);
      assert.match(
        res.stderr,
        /error \(signature\): bad signature on \/api\/v1\/projects\/app\/releases\/latest: the body is not the one signed/,
      );
      assert.doesNotMatch(res.stdout, /update available/);
    });

    await t.step("a replayed answer, validly signed but expired, exits 12", async () => {
      service.mode = "expired";
      const res = await service.client([...CHECK, "--pin-key-set", pin]);
      service.mode = "pass";
      assert.equal(res.code, 12, res.stderr);
      assert.match(res.stderr, /error \(signature\): .*the answer expired at \d+/);
    });

    await t.step(
      "without the pin the same tampered answer is taken (the flag matters)",
      async () => {
        service.mode = "flip";
        const res = await service.client(CHECK);
        service.mode = "pass";
        assert.notEqual(res.code, 12, res.stderr);
      },
    );

    await t.step("rotation: the installed client moves its pin on and keeps working", async () => {
      const nextKid = await addActiveSigningKey(app);
      await app.signer.reload();
      // Both keys sign: the client reads the new set (signed by its old key) and saves it.
      const during = await service.client([...CHECK, "--pin-key-set", pin]);
      assert.equal(during.code, 10, during.stderr);
      const saved = JSON.parse(await Deno.readTextFile(pin));
      assert.ok(saved.keys.some((k: { kid: string }) => k.kid === nextKid), "pin moved on");
      for (const kid of oldKids) {
        await setSigningKeyStatus(app.store, { kid, status: "retired", keepOneActive: true });
      }
      await app.signer.reload();
      const after = await service.client([...CHECK, "--pin-key-set", pin]);
      assert.equal(after.code, 10, after.stderr);
      // Tampering is still caught under the new key.
      service.mode = "flip";
      const flipped = await service.client([...CHECK, "--pin-key-set", pin]);
      service.mode = "pass";
      assert.equal(flipped.code, 12, flipped.stderr);
    });

    await t.step("a client that missed the whole rotation is refused, not fooled", async () => {
      const res = await service.client([...CHECK, "--pin-key-set", stale]);
      assert.equal(res.code, 12, res.stderr);
      assert.match(
        res.stderr,
        /bad signature on \/\.well-known\/uds-keys\.json: no signature of a pinned key verifies/,
      );
      assert.equal(await Deno.readTextFile(stale), installed, "a refused set is not saved");
    });

    await t.step("usage and file errors", async () => {
      const both = await service.client([
        ...CHECK,
        "--pin-key-set",
        pin,
        "--pin-root",
        "A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg",
      ]);
      assert.equal(both.code, 2, both.stderr);
      assert.match(both.stderr, /either --pin-key-set or --pin-root/);
      const missing = await service.client([...CHECK, "--pin-key-set", join(dir, "none.json")]);
      assert.equal(missing.code, 9, missing.stderr);
      assert.match(missing.stderr, /cannot read the pinned key set/);
      const help = await service.client(["--help"]);
      assert.match(help.stdout, /--pin-key-set FILE/);
      assert.match(help.stdout, /--pin-root KEY/);
      assert.match(help.stdout, /12 bad, missing or expired signature/);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
