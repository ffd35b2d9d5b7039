/**
 * What signed answers (docs/signing.md) cost the hot path: the latest-release
 * answer of the service with APP_SIGNING=true against the same service with
 * signing off, on the same data, in interleaved wrk runs (each figure: the best).
 */
import { basicDataDir, type Scenario } from "./context.ts";
import { latestAnswer, measure, type Measured } from "./scenarios_api.ts";
import { findServicePid, startService } from "./process.ts";
import { makeRow } from "./table.ts";

const SIGNED = "latest release, signed";
const UNSIGNED = "signing off";

export const signing: Scenario = {
  name: "signing",
  needs: ["wrk"],
  template: () => [
    {
      scenario: SIGNED,
      metric: "requests/s",
      unit: "req/s",
      service: null,
      baselineName: UNSIGNED,
      ratioOf: "service/baseline",
      target: { of: "ratio", op: ">=", value: 0.9 },
    },
    {
      scenario: SIGNED,
      metric: "CPU per request",
      unit: "µs",
      service: null,
      baselineName: UNSIGNED,
    },
  ],
  async run(ctx) {
    const { data, server, path } = await latestAnswer(ctx);
    const signed = await startService(
      basicDataDir(ctx.workDir),
      { APP_SIGNING: "true" },
      ctx.cleanup,
    );
    try {
      const check = await fetch(`${signed.baseUrl}${path}`, {
        headers: { authorization: `Bearer ${data.key}` },
      });
      await check.body?.cancel();
      if (!check.headers.has("uds-signature")) throw new Error("the signed service did not sign");
      const pids = [await findServicePid(signed.pid), await findServicePid(server.pid)];
      const runs: [Measured[], Measured[]] = [[], []];
      for (let run = 1; run <= ctx.params.runs; run++) {
        for (const [i, base] of [signed.baseUrl, server.baseUrl].entries()) {
          ctx.log(`signing: wrk on the ${i === 0 ? "signed" : "unsigned"} service (run ${run})`);
          runs[i].push(await measure(ctx, `${base}${path}`, data.key, pids[i], run === 1));
        }
      }
      const best = (list: Measured[]) => Math.max(...list.map((m) => m.requestsPerSec));
      const cpu = (list: Measured[]) => Math.min(...list.map((m) => m.cpuUsPerRequest));
      const [rps, cpuRow] = this.template(ctx.params);
      return [
        makeRow({ ...rps, service: best(runs[0]), baseline: best(runs[1]) }),
        makeRow({ ...cpuRow, service: cpu(runs[0]), baseline: cpu(runs[1]) }),
      ];
    } finally {
      await signed.stop();
    }
  },
};
