/**
 * What each layer of a client API request costs: the latest-release route's
 * server CPU per request with every layer on, then with one layer switched
 * off at a time (bench/layer_server.ts passes a no-op part in its place),
 * against the bare Deno.serve baseline. CPU
 * time per request, unlike requests/s, holds whatever else the machine runs.
 */
import { basicDataDir, type Scenario } from "./context.ts";
import { BENCH_LAYERS, type BenchLayer } from "./layers.ts";
import { type Server, startLayerServer } from "./process.ts";
import { BASELINE, latestAnswer, measure, withBaseline } from "./scenarios_api.ts";
import { makeRow, type Row } from "./table.ts";

const LAYERS = "layers (latest-release)";
const ALL_ON = "all layers on";

export const layers: Scenario = {
  name: "layers",
  needs: ["wrk"],
  template: () => [
    {
      scenario: LAYERS,
      metric: "server CPU, all layers on",
      unit: "µs/req",
      service: null,
      baselineName: BASELINE,
      note: "each figure: the least of the rounds (--rounds)",
    },
    ...Object.values(BENCH_LAYERS).map((label) => ({
      scenario: LAYERS,
      metric: `server CPU without ${label}`,
      unit: "µs/req",
      service: null,
      baselineName: ALL_ON,
    })),
  ],
  async run(ctx) {
    const { data, path, answer } = await latestAnswer(ctx);
    // Every configuration runs at once (idle while another is measured), and
    // each is measured once a round: the least of the rounds is the least
    // disturbed by whatever else the machine runs. "All on" is built by the
    // same layer server with nothing replaced, so only the part differs.
    const targets: Array<{ name: string; url: string; pid: number }> = [];
    const offs: Server[] = [];
    for (const layer of ["none", ...Object.keys(BENCH_LAYERS)] as Array<BenchLayer | "none">) {
      const off = await startLayerServer(basicDataDir(ctx.workDir), layer, ctx.cleanup);
      offs.push(off);
      targets.push({
        name: layer === "none" ? ALL_ON : layer,
        url: `${off.baseUrl}${path}`,
        pid: off.pid,
      });
    }
    // The services with a layer off are stopped here, not left idle through later scenarios.
    let least: Map<string, number>;
    try {
      least = await withBaseline(ctx, "layers", answer, async (bare) => {
        targets.push({ name: BASELINE, url: `${bare.baseUrl}/`, pid: bare.pid });
        const least = new Map<string, number>();
        for (let round = 1; round <= ctx.params.rounds; round++) {
          ctx.log(`${LAYERS}: round ${round} of ${ctx.params.rounds}`);
          for (const { name, url, pid } of targets) {
            const { cpuUsPerRequest } = await measure(ctx, url, data.key, pid, round === 1);
            least.set(name, Math.min(least.get(name) ?? Infinity, cpuUsPerRequest));
          }
        }
        return least;
      });
    } finally {
      await Promise.all(offs.map((off) => off.stop()));
    }
    const full = least.get(ALL_ON)!;
    const baseline = least.get(BASELINE)!;

    const [total, ...rows] = this.template(ctx.params);
    return [
      makeRow({ ...total, service: full, baseline }),
      ...(Object.keys(BENCH_LAYERS) as BenchLayer[]).map((layer, i) =>
        makeRow({ ...rows[i], service: least.get(layer)!, baseline: full })
      ),
    ];
  },
};

/** The cost of each layer from the rows of `layers`: µs per request it adds. */
export function formatLayerCosts(rows: Row[]): string | null {
  const mine = rows.filter((row) => row.scenario === LAYERS);
  const total = mine[0];
  if (total?.service == null || total.baseline == null) return null;
  const lines = [
    `Server CPU per latest-release request (µs): baseline ${total.baseline.toFixed(1)}, ` +
    `service ${total.service.toFixed(1)}, above the baseline ${
      (total.service - total.baseline).toFixed(1)
    }`,
  ];
  const width = Math.max(...Object.values(BENCH_LAYERS).map((label: string) => label.length));
  let layered = 0;
  for (const row of mine.slice(1)) {
    if (row.service === null) continue;
    const label = row.metric.replace("server CPU without ", "");
    const cost = total.service - row.service;
    layered += cost;
    lines.push(`  ${label.padEnd(width)}  ${cost.toFixed(1).padStart(6)}`);
  }
  const rest = total.service - total.baseline - layered;
  lines.push(`  ${"the rest (routing, handler)".padEnd(width)}  ${rest.toFixed(1).padStart(6)}`);
  return lines.join("\n");
}
