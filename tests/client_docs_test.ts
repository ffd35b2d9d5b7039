/**
 * docs/client-api.md says what client/cli.ts does: its exit-code table is the
 * CLI's `EXIT` (codes and kinds), its options table names every option, and
 * the failure kinds listed for code are the client's.
 */
import assert from "node:assert/strict";
import { CLI_OPTIONS, EXIT } from "../client/cli.ts";

const doc = await Deno.readTextFile(new URL("../docs/client-api.md", import.meta.url));

Deno.test("docs/client-api.md's exit-code table is the CLI's EXIT", () => {
  const rows = [...doc.matchAll(/^\| (\d+) +\| `([a-z_]+)` +\|/gm)];
  const documented = Object.fromEntries(rows.map(([, code, kind]) => [kind, Number(code)]));
  assert.deepEqual(documented, { ...EXIT });
});

Deno.test("docs/client-api.md's options table names every option of the CLI", () => {
  const table = doc.slice(doc.indexOf("### Options"));
  const documented = new Set(
    [...table.matchAll(/^\| `--([a-z-]+)/gm)].map(([, name]) => name),
  );
  assert.deepEqual([...documented].sort(), [...Object.keys(CLI_OPTIONS), "help"].sort());
});

Deno.test("docs/client-api.md lists every failure kind", () => {
  const line = /kind: ([a-z_ |\n/]+)\./.exec(doc);
  assert.ok(line, "the failure kinds in the code example");
  const kinds = line[1].replace(/\/\//g, "").split("|").map((kind) => kind.trim());
  const failures = Object.keys(EXIT).filter((name) =>
    ![
      "ok",
      "unexpected",
      "usage",
      "update_available",
      "downgrade_available",
      "critical_update",
      "unsupported_version",
    ].includes(name)
  );
  assert.deepEqual(kinds.sort(), failures.sort());
});
