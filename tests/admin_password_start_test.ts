/**
 * Issue 22 item 6, end to end with `deno task start`: APP_ADMIN_PASSWORD
 * gets the password form's rule (12 to 1024 characters) when it creates the
 * first admin; anything shorter stops the start with one line, exit 1.
 */
import assert from "node:assert/strict";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import { makeDataTempDir, PROJECT_ROOT, startServer } from "./server_process.ts";

async function failedStart(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "start"],
    cwd: PROJECT_ROOT,
    env: { NO_COLOR: "1", APP_PORT: "0", APP_HOST: "127.0.0.1", ...env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    signal: AbortSignal.timeout(30_000),
  }).output();
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}

Deno.test({
  name: "issue 22.6: a short APP_ADMIN_PASSWORD stops the first start with one line",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("short-password");
  try {
    for (const password of ["x", "elevenchars"]) {
      await t.step(
        `${password.length} character(s): exit 1, one line, no admin created`,
        async () => {
          const result = await failedStart({ APP_DATA_DIR: dataDir, APP_ADMIN_PASSWORD: password });
          assert.equal(result.code, 1, result.stderr);
          const lines = result.stderr.trim().split("\n");
          assert.equal(lines.length, 1, result.stderr);
          assert.match(
            lines[0],
            new RegExp(
              `^cannot start: APP_ADMIN_PASSWORD must be 12 to 1024 characters long \\(got ${password.length}\\)`,
            ),
          );
          assert.doesNotMatch(result.stderr, /Uncaught|\n\s+at /);
          // The password itself is never shown.
          assert.ok(
            !result.stderr.includes(`${password},`) && !result.stderr.includes(`"${password}"`),
          );
        },
      );
    }

    await t.step("12 characters: the first admin is created and can sign in", async () => {
      await using server = await startServer(dataDir, { APP_ADMIN_PASSWORD: "twelve-chars" });
      const admin = new AdminClient(httpSender([server.baseUrl]));
      assert.equal((await admin.signIn("admin", "twelve-chars")).status, 303);
    });

    await t.step("once an admin exists, the setting is not read again", async () => {
      await using server = await startServer(dataDir, { APP_ADMIN_PASSWORD: "x" });
      const health = await fetch(`${server.baseUrl}/healthz`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
