/**
 * The Velopack client's npm install for the tests (tests/velopack_client.ts, through
 * `npmInstallOnce` of bench/process.ts):
 * it needs node and npm and says so when they are missing, and a run never
 * sees another run's half-made install: the package appears in its place
 * whole, with its `ready` mark, or not at all.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { installVelopack, requireNode, VELOPACK_NPM_BEFORE_DELTAS } from "./velopack_client.ts";

Deno.test("without node and npm on PATH the Velopack client tests say what is missing", async () => {
  await requireNode();
  await assert.rejects(
    requireNode("/nonexistent"),
    /need Node\.js and npm on PATH; node and npm did not run/,
  );
});

Deno.test("concurrent installs of the Velopack client: each sees it whole or not at all", async () => {
  const root = await Deno.makeTempDir({ prefix: "uds-velopack-install-test-" });
  const tmpdir = Deno.env.get("TMPDIR");
  Deno.env.set("TMPDIR", root);
  try {
    const dir = join(root, `uds-${VELOPACK_NPM_BEFORE_DELTAS.replace("@", "-")}`);
    const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
    let done = false;
    const installs = Promise.all([
      installVelopack(VELOPACK_NPM_BEFORE_DELTAS),
      installVelopack(VELOPACK_NPM_BEFORE_DELTAS),
    ]).finally(() => done = true);
    let looks = 0;
    while (!done) {
      if (await exists(dir)) {
        assert.ok(await exists(join(dir, "ready")), "the install's place holds a half install");
      }
      looks++;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const [first, second] = await installs;
    assert.ok(looks > 1, `${looks} looks while installing`);
    assert.equal(first, second);
    assert.ok(await exists(join(first, "package.json")));
    const left = [];
    for await (const entry of Deno.readDir(root)) left.push(entry.name);
    assert.deepEqual(left, [`uds-${VELOPACK_NPM_BEFORE_DELTAS.replace("@", "-")}`]);
  } finally {
    if (tmpdir === undefined) Deno.env.delete("TMPDIR");
    else Deno.env.set("TMPDIR", tmpdir);
    await Deno.remove(root, { recursive: true });
  }
});
