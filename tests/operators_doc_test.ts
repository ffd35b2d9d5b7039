/**
 * docs/operators.md says what the code does: its Settings table has a row for every setting the
 * service reads (src/lib/config.ts, and tools/all_cores.ts for APP_WORKERS) and no other; the
 * backup's list of what it leaves out is exactly `BACKUP_SKIPPED_PREFIXES`; the data layout
 * names every directory the service makes under APP_DATA_DIR.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { SIGNING_KEYS_DIR } from "../src/signing/key_files.ts";
import { BACKUP_SKIPPED_PREFIXES } from "../src/kv/keys.ts";
import { PROJECT_ROOT } from "./server_process.ts";

const read = (path: string) => Deno.readTextFile(join(PROJECT_ROOT, path));

/** The text of `## heading` up to the next heading of the same level. */
function section(page: string, heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/operators.md has "## ${heading}"`);
  const end = page.indexOf("\n## ", start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** The settings a source file reads by name (`"APP_…"` string literals). */
function settingsIn(source: string): string[] {
  return [...source.matchAll(/"(APP_[A-Z0-9_]*[A-Z0-9])"/g)].map((match) => match[1]);
}

Deno.test("docs/operators.md: the Settings table lists every setting the service reads", async () => {
  const page = await read("docs/operators.md");
  const rows = [...section(page, "Settings").matchAll(/^\| `(APP_[A-Z0-9_]+)`/gm)]
    .map((match) => match[1]);
  const inCode = new Set([
    ...settingsIn(await read("src/lib/config.ts")),
    ...settingsIn(await read("tools/all_cores.ts")),
  ]);
  assert.deepEqual(
    [...inCode].filter((name) => !rows.includes(name)),
    [],
    "read by the code, missing from the table",
  );
  assert.deepEqual(
    rows.filter((name) => !inCode.has(name)),
    [],
    "in the table, read by no code",
  );
  assert.equal(new Set(rows).size, rows.length, "each setting has one row");
});

Deno.test("docs/operators.md: the backup leaves out exactly BACKUP_SKIPPED_PREFIXES", async () => {
  const page = await read("docs/operators.md");
  const backup = section(page, "For operators: backup and restore");
  const copied = backup.slice(
    backup.indexOf("- **What is copied.**"),
    backup.indexOf("- **Format**"),
  );
  // The sub-items name the prefixes in backticks before their colon.
  const documented = [...copied.matchAll(/^ {2}- ((?:`[a-z_]+`(?:, )?)+):/gm)]
    .flatMap((match) => [...match[1].matchAll(/`([a-z_]+)`/g)].map((name) => name[1]));
  assert.deepEqual(
    documented.toSorted(),
    BACKUP_SKIPPED_PREFIXES.map((prefix) => {
      assert.equal(prefix.length, 1, "a prefix of one part, as the list names them");
      return String(prefix[0]);
    }).toSorted(),
  );
});

Deno.test("docs/operators.md: the data layout names signing-keys/", async () => {
  const layout = section(await read("docs/operators.md"), "Data layout");
  assert.match(layout, new RegExp(`^- \`${SIGNING_KEYS_DIR}/<kid>\\.pem\``, "m"));
  assert.match(layout, /^- `artifacts\/<uuid>`/m);
  assert.match(layout, /^- `kv\.sqlite3`/m);
});
