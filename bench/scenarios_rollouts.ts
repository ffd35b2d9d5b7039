/**
 * The latest-release route of a project with a staged rollout
 * (docs/rollouts.md), for a client outside the rollout (it gets the
 * previous latest) and one inside it (it gets the new release), each
 * against a bare Deno.serve sending the same bytes.
 */
import { join } from "node:path";
import type { Scenario } from "./context.ts";
import { seedRollout } from "./data.ts";
import { startService } from "./process.ts";
import {
  againstBaseline,
  BASELINE,
  baselineRows,
  type Client,
  cpuRow,
  fetchAnswer,
  wrkNote,
} from "./scenarios_api.ts";
import type { Row, RowInput } from "./table.ts";
import { INSTALL_ID_HEADER, rolloutBucket } from "../src/releases/offer.ts";

const ROLLOUT = "latest-release, staged rollout";
const PERCENTAGE = 50;

/** The first install id `bench-install-N` whose bucket is inside (or outside) the rollout. */
function installId(releaseId: number, inside: boolean): string {
  for (let n = 1;; n++) {
    const id = `bench-install-${n}`;
    if ((rolloutBucket(releaseId, `install:${id}`) < PERCENTAGE * 100) === inside) return id;
  }
}

const SIDES = [
  { side: "outside", inside: false, target: 0.8 },
  { side: "inside", inside: true, target: 0.6 },
] as const;

export const rollout: Scenario = {
  name: "rollout",
  needs: ["wrk"],
  template: () =>
    SIDES.flatMap(({ side, target }): RowInput[] => [
      {
        scenario: ROLLOUT,
        metric: `requests/s, client ${side}`,
        unit: "req/s",
        service: null,
        baselineName: BASELINE,
        ratioOf: "service/baseline",
        target: { of: "ratio", op: ">=", value: target },
      },
      {
        scenario: ROLLOUT,
        metric: `p99 latency, client ${side}`,
        unit: "ms",
        service: null,
        baselineName: BASELINE,
      },
      { ...cpuRow(ROLLOUT), metric: `server CPU per request, client ${side}` },
    ]),
  async run(ctx) {
    const dataDir = join(ctx.workDir, "rollout");
    ctx.log(`${ROLLOUT}: seeding a project with a ${PERCENTAGE}% rollout`);
    const data = await seedRollout(dataDir, PERCENTAGE);
    const server = await startService(dataDir, {}, ctx.cleanup);
    try {
      const url = `${server.baseUrl}/api/v1/projects/${data.slug}/releases/latest`;
      const rows: Row[] = [];
      const template = this.template(ctx.params);
      for (const [index, { side, inside }] of SIDES.entries()) {
        const id = installId(data.release.id, inside);
        const client: Client = { key: data.key, headers: { [INSTALL_ID_HEADER]: id } };
        const expected = inside ? data.release : data.previous;
        const answer = await fetchAnswer(
          url,
          client,
          // deno-lint-ignore no-explicit-any
          (json: any) =>
            json?.release?.id === expected.id ? null : `${side}: not release ${expected.version}`,
        );
        const measured = await againstBaseline(
          ctx,
          `rollout-${side}`,
          url,
          client,
          server,
          answer,
        );
        rows.push(
          ...baselineRows(
            template.slice(index * 3, index * 3 + 3),
            measured,
            `${PERCENTAGE}% rollout, install id ${id}; ${wrkNote(ctx)}`,
          ),
        );
      }
      return rows;
    } finally {
      await server.stop();
    }
  },
};
