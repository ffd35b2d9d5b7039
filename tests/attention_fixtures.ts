/**
 * Realistic data for the dashboard's attention list (docs/admin-ui.md "Dashboard"): a rollout
 * halted by its gates, one waiting on its gate, a rolled-back release, a failing webhook
 * endpoint, TUF metadata that could not be signed, an API key and a publish token that expire
 * within 14 days; besides them, projects and releases that need nothing.
 */
import type { TestApp } from "./helpers.ts";
import { seedKey, seedProject, seedRelease } from "./helpers.ts";
import { seedPublishToken } from "./publish_helpers.ts";
import { rollBack } from "../src/releases/release_policy.ts";
import { getReportCounts } from "../src/reports/reports.ts";
import { applyGateChange, parseGates, setRolloutGates } from "../src/rollouts/gate_records.ts";
import { startRollout } from "../src/releases/rollouts.ts";
import { makeReleaseLatest } from "../src/releases/releases.ts";
import { saveTufRefreshStatus } from "../src/tuf/records.ts";
import { createWebhookEndpoint, type WebhookEndpoint } from "../src/webhooks/outbox.ts";

const DAY_MS = 86_400_000;

export const HALT_REASON = "13 of 52 reports failed (25%) in the 25% stage: at or above 20%";

export interface AttentionSeed {
  endpoint: WebhookEndpoint;
  keyId: number;
}

const GATES = { stages: "5, 25, 50, 100", min_installs: 100, min_hours: 6, advance_below: 2 };

/** Seeds the attention cases (`webhookUrl` should answer 500 for the endpoint to fail). */
export async function seedAttention(
  app: TestApp,
  { webhookUrl, nowMs = Date.now() }: { webhookUrl: string; nowMs?: number },
): Promise<AttentionSeed> {
  // A rollout its gates halted.
  const desktop = await seedProject(app, {
    slug: "acme-desktop",
    name: "Acme Desktop",
    description: "The desktop app for Windows, macOS and Linux.",
  });
  for (const version of ["2.2.0", "2.3.0"]) await seedRelease(app, desktop.id, version);
  const desktopLatest = await seedRelease(app, desktop.id, "2.3.1");
  const halted = await seedRelease(app, desktop.id, "2.4.0-beta.3");
  await makeReleaseLatest(app.store, desktopLatest.id);
  await startRollout(app.store, halted.id, { percentage: 25 });
  await setRolloutGates(app.store, {
    projectId: desktop.id,
    gates: parseGates({ ...GATES, halt_at: 20 }),
  });
  await applyGateChange(app.store, {
    projectId: desktop.id,
    action: "halted",
    reason: HALT_REASON,
    counts: await getReportCounts(app.store, halted.id),
    nowMs,
  });

  // A rollout waiting on its gate.
  const sync = await seedProject(app, { slug: "acme-mobile-sync", name: "Acme Mobile Sync" });
  const syncLatest = await seedRelease(app, sync.id, "5.0.1");
  const gated = await seedRelease(app, sync.id, "5.1.0");
  await makeReleaseLatest(app.store, syncLatest.id);
  await startRollout(app.store, gated.id, { percentage: 5 });
  await setRolloutGates(app.store, {
    projectId: sync.id,
    gates: parseGates({ ...GATES, halt_at: 10 }),
  });

  // A rolled-back release.
  const notes = await seedProject(app, { slug: "field-notes", name: "Field Notes" });
  await seedRelease(app, notes.id, "3.0.2");
  await seedRelease(app, notes.id, "3.1.0");
  await rollBack(app.store, notes.id);

  // Projects that need nothing.
  const cli = await seedProject(app, { slug: "acme-cli", name: "Acme CLI" });
  await seedRelease(app, cli.id, "1.8.0");
  await seedProject(app, { slug: "printer-driver", name: "Printer Driver Updater" });

  // A failing webhook endpoint: the test sends it a ping (or lets the worker deliver).
  const endpoint = await createWebhookEndpoint(app.store, {
    url: webhookUrl,
    events: ["release.published", "rollout.changed"],
    created_by: "admin",
  });

  // TUF metadata the background refresh could not sign.
  await saveTufRefreshStatus(app.store, {
    ran_at: new Date(nowMs).toISOString(),
    failures: [{ project: "acme-cli", error: "no online key for the timestamp role" }],
  });

  // A key and a token that expire within 14 days; one key that expires later (not listed).
  const { apiKey } = await seedKey(app, {
    name: "Production updater (EU)",
    expires_at: new Date(nowMs + 5 * DAY_MS).toISOString(),
  });
  await seedKey(app, {
    name: "Staging updater",
    expires_at: new Date(nowMs + 40 * DAY_MS).toISOString(),
  });
  await seedPublishToken(app.store, {
    name: "GitHub Actions release workflow",
    expires_at: new Date(nowMs + 3 * DAY_MS).toISOString(),
  });
  return { endpoint, keyId: apiKey.id };
}

/** A receiver that answers every delivery with `status` and a short JSON body. */
export function startFailingReceiver(status = 500) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      await req.body?.cancel();
      return Response.json({ error: "database is locked", retry: true }, { status });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/hooks/uds`,
    close: () => server.shutdown(),
  };
}
