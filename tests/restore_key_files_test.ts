/**
 * Nothing lost in a restore (docs/operators.md "For operators: backup and
 * restore"): a service with signing on and a project's Sparkle key, backed up
 * with `--include-signing-keys` and restored, signs its answers and its
 * appcast as before; backed up without it, the backup, the restore, the
 * start-up log and the admin dashboard and Signing keys page each say which
 * private key file is missing and how to bring it back.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { createKeyFiles } from "../src/signing/key_files.ts";
import { writeSparkleKeyFile } from "../src/feeds/sparkle_signing.ts";
import { createSigningKey, setSigningKeyStatus } from "../src/signing/signing_keys.ts";
import { setSparkleFeedKey } from "../src/feeds/sparkle_keys.ts";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { exists } from "./helpers.ts";
import {
  hasChromium,
  launchBrowser,
  SCREENS,
  screenshot,
  sidewaysOverflow,
  signIn,
} from "./browser.ts";
import { makeDataTempDir, runTask, SERVER_ADMIN_PASSWORD, startServer } from "./server_process.ts";

const SPARKLE_BLOCK = "<!-- sparkle-signatures:\n";

/** Whether the element starts in the first screen of the page (it may run on below). */
function topInViewport(page: Page, selector: string): Promise<boolean> {
  return page.evaluate<boolean>(`(() => {
    const box = document.querySelector(${JSON.stringify(selector)})?.getBoundingClientRect();
    return box !== undefined && box.height > 0 && box.top >= 0 && box.top < innerHeight / 2;
  })()`);
}

Deno.test("a restore brings back the private key files, or says loudly which are missing", async (t) => {
  const root = await makeDataTempDir("test-restore-keys");
  const source = join(root, "source");
  const fx = await openDataDir(source);
  const project = await fx.project({ name: "Mac", slug: "mac" });
  await fx.release(project.id, "1.0.0", new TextEncoder().encode("app"), {
    sparkle_signature: btoa(String.fromCharCode(...new Uint8Array(64).fill(7))),
  });
  const { secret } = await fx.key({});
  const { kid, publicKey } = await createKeyFiles(source);
  await createSigningKey(fx.store, { kid, public_key: publicKey, created_by: "t" });
  await setSigningKeyStatus(fx.store, { kid, status: "active", keepOneActive: false });
  const sparkle = generateKeyPairSync("ed25519");
  await writeSparkleKeyFile(source, { projectId: project.id, key: sparkle.privateKey });
  await setSparkleFeedKey(fx.store, {
    project_id: project.id,
    public_key: sparkle.publicKey.export({ format: "jwk" }).x as string,
    bundle_identifier: "",
    set_by: "t",
  });
  fx.close();
  const task = (args: string[], dataDir: string) => runTask(args, { APP_DATA_DIR: dataDir });
  const auth = { headers: { authorization: `Bearer ${secret}` } };

  /** Restores `backup` into a new data dir and starts the service on it, signing on. */
  async function restoreAndStart(backup: string, name: string) {
    const dataDir = join(root, name);
    const restore = await task(["restore", backup], dataDir);
    assert.equal(restore.code, 0, restore.stderr);
    const server = await startServer(dataDir, { APP_SIGNING: "true" });
    const latest = await fetch(`${server.baseUrl}/api/v1/projects/mac/releases/latest`, auth);
    await latest.body?.cancel();
    const appcast = await fetch(`${server.baseUrl}/feeds/sparkle/mac/appcast.xml`, auth);
    assert.equal(appcast.status, 200);
    return {
      restore,
      server,
      signature: latest.headers.get("uds-signature"),
      appcastSigned: (await appcast.text()).includes(SPARKLE_BLOCK),
    };
  }

  await t.step("with --include-signing-keys every key comes back and signs", async () => {
    const backup = join(root, "with-keys");
    const res = await task(["backup", "--include-signing-keys", backup], source);
    assert.equal(res.code, 0, res.stderr);
    assert.doesNotMatch(res.stderr, /WARNING/);
    assert.ok(await exists(join(backup, "sparkle-keys", `${project.id}.pem`)));
    const manifest = JSON.parse(await Deno.readTextFile(join(backup, "manifest.json")));
    assert.deepEqual(manifest.sparkle_keys.map((k: { project_id: number }) => k.project_id), [
      project.id,
    ]);
    const restored = await restoreAndStart(backup, "restored-with-keys");
    await using server = restored.server;
    assert.doesNotMatch(restored.restore.stderr, /WARNING/);
    assert.match(restored.restore.stdout, /and 2 private key files/);
    assert.match(restored.signature ?? "", new RegExp(`^kid=${kid};sig=`));
    assert.ok(restored.appcastSigned, "the restored appcast is signed");
    assert.doesNotMatch(server.output(), /private key file .* is missing/);
  });

  await t.step(
    "without it, backup, restore, start-up and admin pages say what is missing",
    async () => {
      const backup = join(root, "plain");
      const res = await task(["backup", backup], source);
      assert.equal(res.code, 0, res.stderr);
      assert.match(
        res.stderr,
        /WARNING: left out 1 private signing key files and 1 Sparkle key files .*--include-signing-keys/,
      );
      const restored = await restoreAndStart(backup, "restored-plain");
      await using server = restored.server;
      assert.equal(restored.signature, null);
      assert.equal(restored.appcastSigned, false);
      // The restore names each missing file and how to bring it back.
      assert.match(
        restored.restore.stderr,
        new RegExp(`WARNING: Signing key ${kid} \\(active\\): its private key file .* is missing`),
      );
      assert.match(restored.restore.stderr, /--include-signing-keys/);
      assert.match(
        restored.restore.stderr,
        /WARNING: Sparkle key of project mac: its private key file .* is missing/,
      );
      // The start-up log says it at error level, once per file.
      const errors = server.lines().filter((line) => line.includes("private key file"));
      assert.equal(errors.length, 2, server.output());
      for (const line of errors) assert.match(line, /error/i);
      assert.match(errors.join("\n"), new RegExp(`Signing key ${kid} \\(active\\)`));
      assert.match(errors.join("\n"), /Bring it back: copy signing-keys\//);

      const admin = new AdminClient(httpSender([server.baseUrl]));
      assert.equal((await admin.signIn("admin", SERVER_ADMIN_PASSWORD)).status, 303);
      for (const path of ["/admin", "/admin/signing-keys"]) {
        const { res, html } = await admin.page(path);
        assert.equal(res.status, 200, path);
        assert.match(html, /data-missing-key-files/, path);
        assert.match(html, /2 private key files are\s+missing from the data directory/, path);
        assert.match(html, new RegExp(`<strong>Signing key ${kid} \\(active\\)</strong>`), path);
        assert.match(html, /<strong>Sparkle key of project mac<\/strong>/, path);
      }
      const { html } = await admin.page("/admin/signing-keys");
      assert.match(html, /data-key-file-missing/);
      assert.match(html, /private key file missing: not signing/);

      if (!hasChromium) return;
      // The notice at the top of both pages, on a desktop and a phone, without sideways scrolling.
      const browser = await launchBrowser();
      try {
        for (const screen of SCREENS) {
          const page = await browser.newPage({ viewport: screen });
          await signIn(page, server.baseUrl);
          for (const [path, name] of [["/admin", "dashboard"], ["/admin/signing-keys", "keys"]]) {
            await page.goto(server.baseUrl + path);
            assert.ok(
              await topInViewport(page, "[data-missing-key-files]"),
              `${name} ${screen.name}`,
            );
            assert.equal(await sidewaysOverflow(page), 0, `${name} ${screen.name}`);
            await screenshot(page, `restore-missing-keys-${name}-${screen.name}`);
          }
          await page.close();
        }
      } finally {
        await browser.close();
      }

      // The way back the notice gives: copy the files from the old data dir; no restart.
      const restoredDir = join(root, "restored-plain");
      for (const file of [`signing-keys/${kid}.pem`, `sparkle-keys/${project.id}.pem`]) {
        await Deno.mkdir(join(restoredDir, file, ".."), { recursive: true, mode: 0o700 });
        await Deno.copyFile(join(source, file), join(restoredDir, file));
      }
      const deadline = Date.now() + 20_000;
      let signature: string | null = null;
      while (signature === null && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const res = await fetch(`${server.baseUrl}/api/v1/projects/mac/releases/latest`, auth);
        await res.body?.cancel();
        signature = res.headers.get("uds-signature");
      }
      assert.match(signature ?? "", new RegExp(`^kid=${kid};sig=`));
      const appcast = await fetch(`${server.baseUrl}/feeds/sparkle/mac/appcast.xml`, auth);
      assert.ok((await appcast.text()).includes(SPARKLE_BLOCK), "the appcast is signed again");
      const { html: after } = await admin.page("/admin");
      assert.doesNotMatch(after, /data-missing-key-files/);
    },
  );

  await Deno.remove(root, { recursive: true });
});
