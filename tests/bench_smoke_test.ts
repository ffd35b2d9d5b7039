/**
 * `deno task bench` end to end with tiny sizes: every scenario yields figures
 * and the JSON results are written where asked. Figures are not judged here
 * (that is the bench's job on a quiet machine).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { BenchReport } from "../bench/run.ts";
import { SCENARIOS } from "../bench/params.ts";
import { which } from "../bench/process.ts";
import { runTask } from "./server_process.ts";

const missing = ["wrk", "nginx", "curl"].filter((tool) => which(tool) === null);

const ignoredBecause = missing.length === 0
  ? ""
  : ` (ignored: ${missing.join(", ")} not installed; apt-get install -y ${missing.join(" ")})`;

Deno.test({
  name:
    `bench: a tiny run gives a figure for every scenario and writes results.json${ignoredBecause}`,
  ignore: missing.length > 0,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "uds-bench-smoke-" });
    try {
      const out = join(dir, "results.json");
      const { code, stdout, stderr } = await runTask([
        "bench",
        "--duration=1",
        "--warmup=0",
        "--connections=8",
        "--rounds=1",
        "--projects=60",
        "--allow-list=50",
        "--artifact-mib=1",
        "--download-clients=2",
        "--releases=20",
        "--keys=100",
        "--upload-mib=2",
        "--velopack-mib=3",
        "--write-sessions=2",
        "--writes-per-session=2",
        `--out=${out}`,
      ]);
      assert.equal(code, 0, `bench failed:\n${stdout}\n${stderr}`);
      assert.match(stdout, /scenario +metric +service +baseline +ratio +target +met\?/);

      const report: BenchReport = JSON.parse(await Deno.readTextFile(out));
      assert.deepEqual(report.failed, []);
      const scenarios = new Set(report.rows.map((row) => row.scenario));
      assert.equal(scenarios.size, SCENARIOS.length, [...scenarios].join(", "));
      for (const row of report.rows) {
        const what = `${row.scenario} / ${row.metric}`;
        // A count whose goal is none (refused writes) is rightly 0; every other figure is above.
        const countOfNone = row.target?.of === "service" && row.target.op === "<=" &&
          row.target.value === 0;
        assert.ok(
          Number.isFinite(row.service) && (countOfNone ? row.service! >= 0 : row.service! > 0),
          `${what}: service figure`,
        );
        if (row.baselineName) {
          assert.ok(Number.isFinite(row.baseline) && row.baseline! > 0, `${what}: baseline`);
        }
        if (row.ratioOf) assert.ok(Number.isFinite(row.ratio), `${what}: ratio`);
        if (row.target) assert.equal(typeof row.met, "boolean", `${what}: target judged`);
      }
      await assert.rejects(Deno.stat(report.work_dir), Deno.errors.NotFound, "temp data removed");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
