/**
 * The reference client's release safety (docs/client-api.md, docs/reports.md):
 * exit 13 for a release a rollback took back and `--allow-downgrade`, 14
 * for a critical update, 15 below the minimum version with its message, the
 * `report` command, and the `installed` report of the first check after a
 * download, against the service on a local port.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { EXIT, main } from "../client/cli.ts";
import { rollBack, setMinimumVersion, setReleaseCritical } from "../src/releases/release_policy.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { getReportCounts } from "../src/reports/reports.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";

/** Runs the CLI with `args`, its output captured. */
async function run(args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = console.log;
  const error = console.error;
  console.log = (...parts: unknown[]) => lines.push(parts.join(" "));
  console.error = (...parts: unknown[]) => lines.push(parts.join(" "));
  try {
    return { code: await main(args), out: lines.join("\n") };
  } finally {
    console.log = log;
    console.error = error;
  }
}

Deno.test("reference client: rollback, critical, minimum version, reports", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const v1 = await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "1.1.0");
  await makeReleaseLatest(app.store, v1.id);
  const { secret } = await seedKey(app);
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, app.app.fetch);
  const state = await Deno.makeTempDir({ prefix: "uds-client-safety-" });
  const base = ["--base-url", `http://127.0.0.1:${server.addr.port}`, "--state-dir", state];
  Deno.env.set("UPDATE_API_KEY", secret);
  try {
    await t.step(
      "a download is reported as installed by the first check that runs it",
      async () => {
        await startRollout(app.store, v2.id, { percentage: 100 });
        const out = join(state, "app.bin");
        const download = await run([
          "download",
          "--project",
          "app",
          "--current",
          "1.0.0",
          "--out",
          out,
          ...base,
        ]);
        assert.equal(download.code, EXIT.ok, download.out);
        const check = await run(["check", "--project", "app", "--current", "1.1.0", ...base]);
        assert.equal(check.code, EXIT.ok, check.out);
        await app.reports.flush();
        assert.equal((await getReportCounts(app.store, v2.id)).installed, 1);
      },
    );

    await t.step("rolled back: 13 without --allow-downgrade, 10 with it", async () => {
      await rollBack(app.store, project.id);
      const check = await run(["check", "--project", "app", "--current", "1.1.0", ...base]);
      assert.equal(check.code, EXIT.downgrade_available, check.out);
      assert.match(check.out, /rollback: the service offers an older release: 1.1.0 -> 1.0.0/);
      const allowed = await run([
        "check",
        "--project",
        "app",
        "--current",
        "1.1.0",
        "--allow-downgrade",
        ...base,
      ]);
      assert.equal(allowed.code, EXIT.update_available, allowed.out);
      // A newer build the rollback did not take back is not offered a downgrade.
      const newer = await run(["check", "--project", "app", "--current", "2.0.0", ...base]);
      assert.equal(newer.code, EXIT.ok, newer.out);
    });

    await t.step("critical update 14, below the minimum 15 with its message", async () => {
      await setReleaseCritical(app.store, { releaseId: v1.id, critical: true });
      const critical = await run(["check", "--project", "app", "--current", "0.9.0", ...base]);
      assert.equal(critical.code, EXIT.critical_update, critical.out);
      await setMinimumVersion(app.store, { projectId: project.id, version: "0.9.5" });
      const below = await run(["check", "--project", "app", "--current", "0.9.0", ...base]);
      assert.equal(below.code, EXIT.unsupported_version, below.out);
      assert.match(
        below.out,
        /unsupported version: 0.9.0 is below the minimum supported version 0.9.5; update to 1.0.0/,
      );
    });

    await t.step("the report command", async () => {
      const sent = await run([
        "report",
        "--project",
        "app",
        "--event",
        "crashed",
        "--version",
        "1.0.0",
        "--reason",
        "segfault",
        ...base,
      ]);
      assert.equal(sent.code, EXIT.ok, sent.out);
      const bad = await run([
        "report",
        "--project",
        "app",
        "--event",
        "exploded",
        "--version",
        "1",
        ...base,
      ]);
      assert.equal(bad.code, EXIT.usage);
      await app.reports.flush();
      assert.equal((await getReportCounts(app.store, v1.id)).crash, 1);
    });
  } finally {
    Deno.env.delete("UPDATE_API_KEY");
    await server.shutdown();
    await Deno.remove(state, { recursive: true });
  }
});
