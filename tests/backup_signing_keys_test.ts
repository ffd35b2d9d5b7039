/**
 * The private signing keys are in a backup only when asked
 * (`deno task backup --include-signing-keys`, src/backup/signing_keys.ts),
 * 0600 there and 0600 again after `deno task restore`, and the restored
 * service signs with them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { restoreBackup } from "../src/backup/restore.ts";
import { createKeyFiles } from "../src/signing/key_files.ts";
import { createSigner } from "../src/signing/signer.ts";
import { createSigningKey, setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import { createStore } from "../src/kv/store.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { exists, listDir } from "./helpers.ts";
import { makeDataTempDir, runTask } from "./server_process.ts";

const mode = async (path: string) => (await Deno.stat(path)).mode! & 0o777;

async function filesUnder(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) files.push(...await filesUnder(path));
    else files.push(path);
  }
  return files;
}

Deno.test("private signing keys are backed up only when asked, and restored 0600", async (t) => {
  const root = await makeDataTempDir("test-backup-keys");
  const source = join(root, "source");
  const fx = await openDataDir(source);
  const project = await fx.project({ name: "Desktop", slug: "desktop" });
  await fx.release(project.id, "1.0.0", new TextEncoder().encode("artifact"));
  const { kid, publicKey } = await createKeyFiles(source);
  await createSigningKey(fx.store, { kid, public_key: publicKey, created_by: "t" });
  await setSigningKeyStatus(fx.store, { kid, status: "active", keepOneActive: false });
  fx.close();
  const pem = await Deno.readFile(join(source, "signing-keys", `${kid}.pem`));
  const task = (args: string[], dataDir = source) => runTask(args, { APP_DATA_DIR: dataDir });
  const plain = join(root, "plain");
  const withKeys = join(root, "with-keys");

  await t.step("without the flag no private key is in the backup", async () => {
    const res = await task(["backup", plain]);
    assert.equal(res.code, 0, res.stderr);
    assert.doesNotMatch(res.stdout, /signing keys/);
    assert.match(res.stderr, /WARNING: left out 1 private signing key files and 0 Sparkle key/);
    assert.deepEqual(await listDir(plain), ["artifacts", "kv.jsonl", "manifest.json"]);
    for (const file of await filesUnder(plain)) {
      assert.doesNotMatch(await Deno.readTextFile(file), /PRIVATE KEY/, file);
    }
    const manifest = JSON.parse(await Deno.readTextFile(join(plain, "manifest.json")));
    assert.equal(manifest.signing_keys, undefined);
  });

  await t.step("--include-signing-keys copies them 0600 and lists them", async () => {
    const res = await task(["backup", "--include-signing-keys", withKeys]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(
      res.stdout,
      /1 private signing keys and 0 Sparkle keys \(keep this backup secret\)/,
    );
    const copy = join(withKeys, "signing-keys", `${kid}.pem`);
    assert.deepEqual(await Deno.readFile(copy), pem);
    assert.equal(await mode(copy), 0o600);
    assert.equal(await mode(join(withKeys, "signing-keys")), 0o700);
    const manifest = JSON.parse(await Deno.readTextFile(join(withKeys, "manifest.json")));
    assert.deepEqual(manifest.signing_keys.map((k: { kid: string }) => k.kid), [kid]);
    assert.match(manifest.signing_keys[0].sha256, /^[0-9a-f]{64}$/);
  });

  await t.step("an unknown flag is a usage error", async () => {
    const res = await task(["backup", "--include-everything", join(root, "never")]);
    assert.equal(res.code, 2);
    assert.match(
      res.stderr,
      /usage: deno task backup \[--include-signing-keys\] \[--include-webhook-secrets\] <dir>/,
    );
  });

  await t.step("restore puts them back 0600, and the restored data signs with them", async () => {
    const restored = join(root, "restored");
    const res = await task(["restore", withKeys], restored);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /and 1 private key files/);
    const file = join(restored, "signing-keys", `${kid}.pem`);
    assert.deepEqual(await Deno.readFile(file), pem);
    assert.equal(await mode(file), 0o600);
    assert.equal(await mode(join(restored, "signing-keys")), 0o700);
    const kv = await Deno.openKv(join(restored, "kv.sqlite3"));
    try {
      const signer = createSigner({
        store: createStore(kv),
        dataDir: restored,
        ttlSeconds: 3600,
        enabled: true,
      });
      await signer.ready();
      const headers = new Map(signer.sign({ method: "GET", path: "/", status: 200, sha256: "00" }));
      assert.match(headers.get("uds-signature")!, new RegExp(`^kid=${kid};sig=`));
    } finally {
      kv.close();
    }
  });

  await t.step("a backup without keys restores none", async () => {
    const restored = join(root, "restored-plain");
    const res = await task(["restore", plain], restored);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(await exists(join(restored, "signing-keys")), false);
  });

  await t.step("a damaged key file fails the restore and leaves no key behind", async () => {
    await Deno.writeTextFile(join(withKeys, "signing-keys", `${kid}.pem`), "damaged");
    const restored = join(root, "restored-damaged");
    await assert.rejects(
      restoreBackup(withKeys, {
        dataDir: restored,
        kvPath: join(restored, "kv.sqlite3"),
        artifactsDir: join(restored, "artifacts"),
      }),
      /signing-keys\/k[0-9a-f]{16}\.pem does not match its SHA-256/,
    );
    assert.deepEqual(await listDir(join(restored, "signing-keys")).catch(() => []), []);
    assert.equal(await exists(join(restored, "kv.sqlite3")), false);
  });

  await Deno.remove(root, { recursive: true });
});
