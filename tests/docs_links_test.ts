/**
 * The repository documents itself: every relative link in the README and in
 * docs/ leads to a file that is in the repository, and no page sends the
 * reader to a contract file that is not (client-api.md / admin-contract.md
 * outside docs/).
 */
import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { PROJECT_ROOT } from "./server_process.ts";
import { exists } from "./helpers.ts";

async function pages(): Promise<string[]> {
  const files = [join(PROJECT_ROOT, "README.md")];
  for await (const entry of Deno.readDir(join(PROJECT_ROOT, "docs"))) {
    if (entry.isFile && entry.name.endsWith(".md")) {
      files.push(join(PROJECT_ROOT, "docs", entry.name));
    }
  }
  return files.sort();
}

Deno.test("docs: relative links resolve; no page points at a file outside the repository", async (t) => {
  for (const file of await pages()) {
    const name = relative(PROJECT_ROOT, file);
    await t.step(name, async () => {
      const text = await Deno.readTextFile(file);
      const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]);
      for (const link of links) {
        if (/^[a-z]+:/i.test(link) || link.startsWith("#")) continue;
        const target = join(dirname(file), link.split("#")[0]);
        assert.ok(await exists(target), `${name}: ${link} does not exist`);
      }
      // A bare mention (not a link) of a contract file means a file the reader cannot open.
      const bare = text.replace(/\[[^\]]*\]\([^)]*\)/g, "link").match(
        /`?(client-api|admin-contract)\.md`?/g,
      );
      assert.equal(bare, null, `${name} names ${bare} without a link to a file here`);
    });
  }
});
