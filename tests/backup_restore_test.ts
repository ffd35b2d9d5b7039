/** Backup and restore refuse what they must, and never leave half a result behind. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createBackup } from "../src/backup/backup.ts";
import { restoreBackup } from "../src/backup/restore.ts";
import { BackupError, type Manifest } from "../src/backup/format.ts";
import { BACKUP_SKIPPED_PREFIXES } from "../src/kv/keys.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { exists, listDir } from "./helpers.ts";

function location(dataDir: string) {
  return { kvPath: join(dataDir, "kv.sqlite3"), artifactsDir: join(dataDir, "artifacts") };
}

Deno.test("backup and restore guard rails", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "uds-backup-" });
  const source = join(root, "source");
  const fx = await openDataDir(source);
  const project = await fx.project({ name: "Desktop", slug: "desktop" });
  const one = await fx.release(project.id, "1.0.0", new TextEncoder().encode("first artifact"));
  const two = await fx.release(project.id, "2.0.0", new TextEncoder().encode("second artifact"));
  fx.close();
  const backup = join(root, "backup");
  const manifest = await createBackup(location(source), backup);

  await t.step("a backup holds the manifest, kv.jsonl and each artifact", async () => {
    assert.deepEqual(await listDir(backup), ["artifacts", "kv.jsonl", "manifest.json"]);
    assert.deepEqual(
      await listDir(join(backup, "artifacts")),
      [one.storage_key, two.storage_key].sort(),
    );
    assert.deepEqual(manifest.counts, { projects: 1, releases: 2, api_keys: 0 });
    assert.deepEqual(
      manifest.artifacts.map((a) => a.sha256).sort(),
      [one.checksum_sha256, two.checksum_sha256].sort(),
    );
  });

  await t.step("backup refuses an existing target directory", async () => {
    await assert.rejects(createBackup(location(source), backup), /already exists/);
    const empty = join(root, "empty-dir");
    await Deno.mkdir(empty);
    await assert.rejects(createBackup(location(source), empty), /already exists/);
  });

  await t.step("backup refuses a data dir without a database, creating none", async () => {
    const nowhere = join(root, "nowhere");
    await assert.rejects(createBackup(location(nowhere), join(root, "b0")), /no database/);
    assert.equal(await exists(join(nowhere, "kv.sqlite3")), false);
  });

  await t.step("a damaged or missing artifact fails the backup and leaves nothing", async () => {
    const path = join(source, "artifacts", two.storage_key);
    const good = await Deno.readFile(path);
    await Deno.writeTextFile(path, "second artifacT");
    await assert.rejects(
      createBackup(location(source), join(root, "b1")),
      new RegExp(`artifact of release ${two.id} .* is damaged`),
    );
    assert.equal(await exists(join(root, "b1")), false);
    await Deno.remove(path);
    await assert.rejects(createBackup(location(source), join(root, "b2")), /is missing/);
    assert.equal(await exists(join(root, "b2")), false);
    await Deno.writeFile(path, good);
  });

  await t.step("restore refuses a data dir with a database or artifacts", async () => {
    await assert.rejects(restoreBackup(backup, location(source)), /kv\.sqlite3 exists/);
    const withArtifact = join(root, "with-artifact");
    await Deno.mkdir(join(withArtifact, "artifacts"), { recursive: true });
    await Deno.writeTextFile(join(withArtifact, "artifacts", "stray"), "x");
    await assert.rejects(restoreBackup(backup, location(withArtifact)), /is not empty/);
    assert.equal(await exists(join(withArtifact, "kv.sqlite3")), false);
  });

  await t.step("restore refuses what is not a complete, intact backup", async () => {
    await assert.rejects(
      restoreBackup(root, location(join(root, "r0"))),
      /manifest\.json is missing/,
    );

    const copy = async (name: string) => {
      const dir = join(root, name);
      await Deno.mkdir(join(dir, "artifacts"), { recursive: true });
      for (const file of ["kv.jsonl", "manifest.json"]) {
        await Deno.copyFile(join(backup, file), join(dir, file));
      }
      for (const key of await listDir(join(backup, "artifacts"))) {
        await Deno.copyFile(join(backup, "artifacts", key), join(dir, "artifacts", key));
      }
      return dir;
    };

    const newer = await copy("newer");
    const m = JSON.parse(await Deno.readTextFile(join(newer, "manifest.json"))) as Manifest;
    await Deno.writeTextFile(
      join(newer, "manifest.json"),
      JSON.stringify({ ...m, format_version: 2 }),
    );
    await assert.rejects(
      restoreBackup(newer, location(join(root, "r1"))),
      /version 2 is not supported/,
    );

    const edited = await copy("edited");
    await Deno.writeTextFile(join(edited, "kv.jsonl"), "\n", { append: true });
    await assert.rejects(restoreBackup(edited, location(join(root, "r2"))), /backup is damaged/);

    // A damaged artifact is found after others were placed: the target ends up empty again.
    const damaged = await copy("damaged");
    const last = manifest.artifacts[manifest.artifacts.length - 1].storage_key;
    await Deno.writeTextFile(join(damaged, "artifacts", last), "tampered");
    const target = join(root, "r3");
    await assert.rejects(restoreBackup(damaged, location(target)), BackupError);
    assert.equal(await exists(join(target, "artifacts")), false);
    assert.equal(await exists(join(target, "kv.sqlite3")), false);
  });

  await t.step("a clean restore reproduces every entry", async () => {
    const target = join(root, "restored");
    const restored = await restoreBackup(backup, location(target));
    assert.equal(restored.kv.entries, manifest.kv.entries);
    // Short-lived entries (written with expireIn) are left out of backups by design.
    const skipped = (key: Deno.KvKey) =>
      BACKUP_SKIPPED_PREFIXES.some((prefix) => prefix.every((part, i) => key[i] === part));
    const dump = async (dataDir: string) => {
      const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
      const entries = [];
      for await (const entry of kv.list({ prefix: [] })) {
        if (!skipped(entry.key)) entries.push([entry.key, entry.value]);
      }
      kv.close();
      return entries;
    };
    assert.deepEqual(await dump(target), await dump(source));
    assert.deepEqual(
      await listDir(join(target, "artifacts")),
      await listDir(join(backup, "artifacts")),
    );
  });

  await Deno.remove(root, { recursive: true });
});
