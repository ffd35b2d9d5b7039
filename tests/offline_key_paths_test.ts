/**
 * The offline tools write where the operator says (tools/caller_paths.ts): `deno task
 * sign-key-set` and `deno task tuf-root` take relative paths from the directory they were run in
 * (INIT_CWD), not from the checkout `deno task` runs them in, and a private root key is never
 * written inside the checkout (docs/signing.md "Offline root", docs/tuf.md "The root").
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PROJECT_ROOT, runTask } from "./server_process.ts";

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("offline root keys land where the operator ran the task, never in the checkout", async (t) => {
  const work = await Deno.makeTempDir({ prefix: "uds-offline-" });
  const stray = ["root.pem", "root-a.pem", "1.root.json", "keys.json"].map((name) =>
    join(PROJECT_ROOT, name)
  );
  for (const path of stray) assert.ok(!(await exists(path)), `${path} was there before the test`);
  try {
    let publicKey = "";
    await t.step("a relative --out is taken from the caller's directory", async () => {
      const made = await runTask(["sign-key-set", "new-root", "--out", "root-a.pem"], {
        INIT_CWD: work,
      });
      assert.equal(made.code, 0, made.stderr);
      assert.ok(await exists(join(work, "root-a.pem")));
      assert.equal((await Deno.stat(join(work, "root-a.pem"))).mode! & 0o777, 0o600);
      publicKey = /root public key \(pin it with --pin-root\): (\S+)/.exec(made.stdout)![1];
    });

    await t.step("a path inside the checkout is refused, nothing written", async () => {
      for (
        const [out, cwd] of [["root.pem", PROJECT_ROOT], [join(PROJECT_ROOT, "root.pem"), work]]
      ) {
        const refused = await runTask(["sign-key-set", "new-root", "--out", out], {
          INIT_CWD: cwd,
        });
        assert.equal(refused.code, 1, refused.stdout);
        assert.match(refused.stderr, /--out .*root\.pem is inside the checkout/);
      }
    });

    await t.step("tuf-root reads and writes from the caller's directory too", async () => {
      await Deno.writeTextFile(
        join(work, "keys.json"),
        JSON.stringify({
          keys: [{ kid: "k1", alg: "Ed25519", public_key: publicKey, status: "active" }],
        }),
      );
      const made = await runTask([
        "tuf-root",
        "make",
        "--version",
        "1",
        `--root-key=${publicKey}`,
        "--key-set",
        "keys.json",
        "--out",
        "1.root.json",
      ], { INIT_CWD: work });
      assert.equal(made.code, 0, made.stderr);
      const signed = await runTask(
        ["tuf-root", "sign", "--in", "1.root.json", "--key", "root-a.pem"],
        { INIT_CWD: work },
      );
      assert.equal(signed.code, 0, signed.stderr);
      const verified = await runTask(["tuf-root", "verify", "--in", "1.root.json"], {
        INIT_CWD: work,
      });
      assert.equal(verified.code, 0, verified.stderr);
    });

    await t.step("nothing landed in the checkout; *.pem is git-ignored there", async () => {
      for (const path of stray) assert.ok(!(await exists(path)), `${path} was written`);
      const ignored = await new Deno.Command("git", {
        args: ["check-ignore", "-q", "root.pem"],
        cwd: PROJECT_ROOT,
      }).output();
      assert.equal(ignored.code, 0, "root.pem is not git-ignored");
    });
  } finally {
    for (const path of stray) await Deno.remove(path).catch(() => {});
    await Deno.remove(work, { recursive: true });
  }
});
