/**
 * The Velopack client's npm install for the tests (tests/velopack_client.ts, through
 * `npmInstallOnce` of bench/process.ts):
 * it needs node and npm and says so when they are missing, a run never
 * sees another run's half-made install (the package appears in its place
 * whole, with its `ready` mark, or not at all) nor loses a complete one, and a
 * changed prepare step makes a fresh install.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { npmInstallOnce } from "../bench/process.ts";
import {
  installVelopack,
  requireNode,
  VELOPACK_NPM_BEFORE_DELTAS,
  VELOPACK_PREPARE,
} from "./velopack_client.ts";

Deno.test("without node and npm on PATH the Velopack client tests say what is missing", async () => {
  await requireNode();
  await assert.rejects(
    requireNode("/nonexistent"),
    /need Node\.js and npm on PATH; node and npm did not run/,
  );
});

/** Runs `body` with TMPDIR set to a fresh directory, removed after. */
async function inTempRoot(body: (root: string) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "uds-velopack-install-test-" });
  const tmpdir = Deno.env.get("TMPDIR");
  Deno.env.set("TMPDIR", root);
  try {
    await body(root);
  } finally {
    if (tmpdir === undefined) Deno.env.delete("TMPDIR");
    else Deno.env.set("TMPDIR", tmpdir);
    await Deno.remove(root, { recursive: true });
  }
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
const NAME = `uds-${VELOPACK_NPM_BEFORE_DELTAS.replace("@", "-")}-prepared-${VELOPACK_PREPARE}`;

Deno.test("concurrent installs of the Velopack client: each sees it whole or not at all", async () => {
  await inTempRoot(async (root) => {
    const dir = join(root, NAME);
    // A half install from an older layout, in the install's place without its `ready` mark.
    await Deno.mkdir(join(dir, "node_modules"), { recursive: true });
    let done = false;
    const installs = Promise.all([
      installVelopack(VELOPACK_NPM_BEFORE_DELTAS),
      installVelopack(VELOPACK_NPM_BEFORE_DELTAS),
    ]).finally(() => done = true);
    let looks = 0;
    let whole = false;
    while (!done) {
      const ready = await exists(join(dir, "ready"));
      assert.ok(ready || !whole, "a complete install left its place");
      whole ||= ready;
      looks++;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const [first, second] = await installs;
    assert.ok(looks > 1, `${looks} looks while installing`);
    assert.equal(first, second);
    assert.equal(first, join(dir, "node_modules", "velopack"));
    assert.ok(await exists(join(first, "package.json")));
    const left = [];
    for await (const entry of Deno.readDir(root)) left.push(entry.name);
    assert.deepEqual(left.sort(), [NAME, `${NAME}.lock`]);
  });
});

Deno.test("a changed prepare step makes a fresh install beside the old one", async () => {
  await inTempRoot(async () => {
    const before = await installVelopack(VELOPACK_NPM_BEFORE_DELTAS);
    const prepared: string[] = [];
    const dir = await npmInstallOnce(VELOPACK_NPM_BEFORE_DELTAS, {
      npmArgs: ["--ignore-scripts"],
      prepare: { version: "changed", run: (fresh) => Promise.resolve(void prepared.push(fresh)) },
    });
    assert.equal(prepared.length, 1, "the changed prepare step ran");
    assert.notEqual(join(dir, "node_modules", "velopack"), before);
    assert.ok(await exists(join(before, "package.json")));
    assert.ok(await exists(join(dir, "ready")));
  });
});
