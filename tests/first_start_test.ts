/**
 * Issue 19 item 8, first start: the `./data` a checkout ships (mode 755, only
 * the keep file) is made private by the service itself, without a warning; a
 * data dir that already holds other files keeps its mode and gets the warning.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { KEEP_FILE, makeFreshDirPrivate } from "../src/lib/private_files.ts";
import { makeDataTempDir, startServer } from "./server_process.ts";

const modeOf = async (path: string) => ((await Deno.stat(path)).mode! & 0o777).toString(8);

Deno.test("makeFreshDirPrivate: only a dir that holds the keep file alone", async () => {
  const root = await Deno.makeTempDir({ prefix: "uds-fresh-" });
  try {
    const empty = join(root, "empty");
    const kept = join(root, "kept");
    const used = join(root, "used");
    const subdir = join(root, "subdir");
    for (const dir of [empty, kept, used, subdir]) await Deno.mkdir(dir);
    await Deno.writeTextFile(join(kept, KEEP_FILE), "");
    await Deno.writeTextFile(join(used, KEEP_FILE), "");
    await Deno.writeTextFile(join(used, "notes.txt"), "mine");
    await Deno.mkdir(join(subdir, KEEP_FILE));
    for (const dir of [empty, kept, used, subdir]) await Deno.chmod(dir, 0o755);
    assert.equal(await makeFreshDirPrivate(empty), false);
    assert.equal(await makeFreshDirPrivate(kept), true);
    assert.equal(await makeFreshDirPrivate(used), false);
    assert.equal(await makeFreshDirPrivate(subdir), false);
    assert.deepEqual(
      await Promise.all([empty, kept, used, subdir].map(modeOf)),
      ["755", "700", "755", "755"],
    );
    assert.equal(await makeFreshDirPrivate(kept), false, "already private: nothing to do");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name: "first start on a checkout's ./data: made private, no warning",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dataDir = await makeDataTempDir("first-start");
    try {
      await Deno.writeTextFile(join(dataDir, KEEP_FILE), "");
      await Deno.chmod(dataDir, 0o755);
      const server = await startServer(dataDir);
      await server.stop();
      assert.equal(await modeOf(dataDir), "700");
      assert.match(server.output(), /made the new data directory .* private \(mode 700\)/);
      assert.doesNotMatch(server.output(), /can be read by other users/);

      // The second start: the directory holds the KV now; opened up again, it only warns.
      await Deno.chmod(dataDir, 0o755);
      const again = await startServer(dataDir);
      await again.stop();
      assert.equal(await modeOf(dataDir), "755");
      assert.match(again.output(), /can be read by other users \(mode 755\)/);
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
