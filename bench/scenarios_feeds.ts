/**
 * The electron-updater feed (`/feeds/electron/{slug}/latest.yml`, issue 26):
 * requests/s against a bare Deno.serve sending the same bytes and headers, in
 * the same run (goal ≥ 0.8×), on the basic data set.
 */
import type { Scenario } from "./context.ts";
import {
  ADDED_BY_DENO_SERVE,
  againstBaseline,
  type Answer,
  BASELINE,
  baselineRows,
  cpuRow,
  wrkNote,
} from "./scenarios_api.ts";

const FEED = "electron feed";

/** GETs the feed with the key until it answers 200 (a fresh data set may wait for its SHA-512). */
async function feedAnswer(url: string, key: string): Promise<Answer> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    const body = new Uint8Array(await res.arrayBuffer());
    if (res.status === 200) {
      const text = new TextDecoder().decode(body);
      if (!/^version: /m.test(text)) throw new Error(`GET ${url}: not a feed: ${text}`);
      const headers = [...res.headers].filter(([name]) => !ADDED_BY_DENO_SERVE.has(name));
      return { body, headers };
    }
    if (Date.now() > deadline) throw new Error(`GET ${url} answered ${res.status}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export const electronFeed: Scenario = {
  name: "feed",
  needs: ["wrk"],
  template: () => [
    {
      scenario: FEED,
      metric: "requests/s",
      unit: "req/s",
      service: null,
      baselineName: BASELINE,
      ratioOf: "service/baseline",
      target: { of: "ratio", op: ">=", value: 0.8 },
    },
    { scenario: FEED, metric: "p99 latency", unit: "ms", service: null, baselineName: BASELINE },
    cpuRow(FEED),
  ],
  async run(ctx) {
    const { data, server } = await ctx.basic();
    const url = `${server.baseUrl}/feeds/electron/${data.slug}/latest.yml`;
    const answer = await feedAnswer(url, data.key);
    const measured = await againstBaseline(ctx, "feed", url, data.key, server, answer);
    return baselineRows(this.template(ctx.params), measured, wrkNote(ctx));
  },
};
