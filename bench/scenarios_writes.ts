/**
 * The write path (issue 19): admin sessions uploading 1 KiB releases at once,
 * to one project and to a project each, and creating keys, at 2, 8, 16 …
 * sessions (up to --write-sessions): how many writes were refused (the goal
 * is none) and the p50/p99 of an upload; then the client API's latest-release
 * p99 under wrk while an admin saves a project every second, against the same
 * run without writes (goal: within 1.5×).
 */
import { join } from "node:path";
import { AdminClient, httpSender } from "../tests/admin_helpers.ts";
import type { BenchContext, Scenario } from "./context.ts";
import { type Server, startService } from "./process.ts";
import type { BenchParams } from "./params.ts";
import { percentile } from "./stats.ts";
import { makeRow, type Row, type RowInput } from "./table.ts";
import { runWrk } from "./wrk.ts";

const PASSWORD = "bench-password-123";
const SCENARIO = "writes";

/** 2, 8, 16, 32 … up to `most` (and `most` itself). */
function sessionCounts(most: number): number[] {
  const counts = [2, 8, 16, 32, 64].filter((count) => count < most);
  return [...counts, most];
}

interface Timed {
  status: number;
  ms: number;
}

async function timed(send: () => Promise<Response>): Promise<Timed> {
  const started = performance.now();
  const res = await send();
  await res.body?.cancel();
  return { status: res.status, ms: performance.now() - started };
}

/** Rows of one batch of writes: refused count, p50 and p99. */
function batchRows(what: string, runs: Timed[], success: number): RowInput[] {
  const times = runs.map((run) => run.ms);
  const refused = runs.filter((run) => run.status !== success).length;
  return [
    {
      scenario: SCENARIO,
      metric: `${what}: refused`,
      unit: "of " + runs.length,
      service: refused,
      target: { of: "service", op: "<=", value: 0 },
    },
    { scenario: SCENARIO, metric: `${what}: p50`, unit: "ms", service: percentile(times, 50) },
    { scenario: SCENARIO, metric: `${what}: p99`, unit: "ms", service: percentile(times, 99) },
  ];
}

function upload(client: AdminClient, slug: string, version: string): Promise<Timed> {
  return timed(() =>
    client.upload(`/admin/projects/${slug}/releases`, [
      ["csrf_token", client.csrfToken],
      ["version", version],
      ["file", new File([crypto.getRandomValues(new Uint8Array(1024))], "app.bin")],
    ])
  );
}

/** The rows this scenario makes, without figures. */
function template(params: BenchParams): RowInput[] {
  const rows: RowInput[] = [];
  for (const sessions of sessionCounts(params.writeSessions)) {
    for (const what of ["uploads to one project", "uploads to a project each", "key creation"]) {
      rows.push(...batchRows(`${sessions} sessions, ${what}`, [{ status: 0, ms: 0 }], 0));
    }
  }
  rows.push(
    { scenario: SCENARIO, metric: "latest p99 without writes", unit: "ms", service: null },
    {
      scenario: SCENARIO,
      metric: "latest p99 under one admin write a second",
      unit: "ms",
      service: null,
      baselineName: "without writes",
      ratioOf: "service/baseline",
      target: { of: "ratio", op: "<=", value: 1.5 },
    },
  );
  return rows.map((row) => ({ ...row, service: null }));
}

async function run(ctx: BenchContext): Promise<Row[]> {
  const { params } = ctx;
  const dataDir = join(ctx.workDir, "writes");
  await Deno.mkdir(dataDir, { recursive: true });
  const server: Server = await startService(dataDir, { APP_ADMIN_PASSWORD: PASSWORD }, ctx.cleanup);
  const most = params.writeSessions;
  const clients: AdminClient[] = [];
  for (let i = 0; i < most; i++) {
    const client = new AdminClient(httpSender([server.baseUrl]));
    const res = await client.signIn("admin", PASSWORD);
    if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
    clients.push(client);
  }
  const admin = clients[0];
  await admin.page("/admin/projects");
  for (const slug of ["shared", ...clients.map((_, i) => `w-${i}`)]) {
    const res = await admin.post("/admin/projects", { name: slug, slug });
    await res.body?.cancel();
  }

  const rows: RowInput[] = [];
  let round = 0;
  for (const sessions of sessionCounts(most)) {
    round++;
    ctx.log(`${SCENARIO}: ${sessions} sessions × ${params.writesPerSession} uploads and keys`);
    const group = clients.slice(0, sessions);
    const each = async (write: (client: AdminClient, i: number, n: number) => Promise<Timed>) =>
      (await Promise.all(group.map(async (client, i) => {
        const mine: Timed[] = [];
        for (let n = 0; n < params.writesPerSession; n++) mine.push(await write(client, i, n));
        return mine;
      }))).flat();
    rows.push(...batchRows(
      `${sessions} sessions, uploads to one project`,
      await each((client, i, n) => upload(client, "shared", `${round}.${i}.${n}`)),
      303,
    ));
    rows.push(...batchRows(
      `${sessions} sessions, uploads to a project each`,
      await each((client, i, n) => upload(client, `w-${i}`, `${round}.${n}`)),
      303,
    ));
    await Promise.all(group.map((client) => client.page("/admin/api-keys")));
    rows.push(...batchRows(
      `${sessions} sessions, key creation`,
      await each((client, i, n) =>
        timed(() =>
          client.post("/admin/api-keys", {
            name: `bench ${round}.${i}.${n}`,
            can_download: "on",
            scope_mode: "all_projects",
          })
        )
      ),
      200,
    ));
  }

  // Reads under admin writes: the latest release of "shared" with a key, with and without a save
  // of another project every second.
  const created = await admin.post("/admin/api-keys", {
    name: "reader",
    can_download: "on",
    scope_mode: "all_projects",
  });
  const secret = /data-api-key="([^"]+)"/.exec(await created.text())?.[1];
  if (secret === undefined) throw new Error("no key on the created key's page");
  const wrk = (durationSeconds: number) =>
    runWrk(ctx.tools.wrk!, {
      url: `${server.baseUrl}/api/v1/projects/shared/releases/latest`,
      headers: { authorization: `Bearer ${secret}` },
      connections: params.connections,
      threads: params.threads,
      durationSeconds,
    });
  if (params.warmup > 0) await wrk(params.warmup);
  const quiet = await wrk(params.duration);
  await admin.page("/admin/projects/w-0");
  let writing = true;
  const writer = (async () => {
    for (let n = 0; writing; n++) {
      const res = await admin.post("/admin/projects/w-0", {
        name: `w-0 ${n}`,
        description: `${n}`,
      });
      await res.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const busy = await wrk(params.duration);
  writing = false;
  await writer;
  rows.push(
    { scenario: SCENARIO, metric: "latest p99 without writes", unit: "ms", service: quiet.p99Ms },
    {
      scenario: SCENARIO,
      metric: "latest p99 under one admin write a second",
      unit: "ms",
      service: busy.p99Ms,
      baseline: quiet.p99Ms,
      baselineName: "without writes",
      ratioOf: "service/baseline",
      target: { of: "ratio", op: "<=", value: 1.5 },
    },
  );
  await server.stop();
  return rows.map(makeRow);
}

export const writes: Scenario = { name: "writes", needs: ["wrk"], template, run };
