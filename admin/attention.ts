/**
 * What needs someone, for the dashboard (docs/admin-ui.md "Dashboard"): halted rollouts and why,
 * rollouts waiting on a gate, rolled-back releases still in force, failing webhook endpoints,
 * TUF metadata that could not be signed, API keys and publish tokens that expire within 14 days.
 * Each is one line with the page where it is dealt with; an account sees only the lines whose
 * page its role may open. Everything is read from small lists (rollouts, gate records, release
 * policies, webhook endpoints, the key expiry index), never by walking every project.
 */
import { listKeysExpiringBetween } from "../src/projects/aggregates.ts";
import { getApiKey } from "../src/credentials/api_keys.ts";
import type { AdminRole } from "../src/accounts/admin_users.ts";
import { getLatestView } from "../src/releases/latest_view.ts";
import { getProjectsByIds } from "../src/projects/projects.ts";
import { listPublishTokens } from "../src/credentials/publish_tokens.ts";
import { listRollbacks } from "../src/releases/release_policy.ts";
import { getRelease } from "../src/releases/releases.ts";
import { listRolloutGates } from "../src/rollouts/gate_records.ts";
import { listRollouts } from "../src/releases/rollouts.ts";
import type { Store } from "../src/kv/store.ts";
import { getTufRefreshStatus } from "../src/tuf/records.ts";
import { listWebhookEndpointHealth, listWebhookEndpoints } from "../src/webhooks/outbox.ts";
import { readStage } from "../src/rollouts/gates.ts";
import { can } from "./roles.ts";

/** How far ahead an expiring key or token is listed. */
export const EXPIRY_NOTICE_DAYS = 14;
/** Lines of one kind before they are summed up in one line. */
const LINES_PER_KIND = 3;

export type AttentionKind =
  | "halted"
  | "gated"
  | "rolled-back"
  | "webhook"
  | "signing"
  | "key"
  | "token";

/** One line of the dashboard's attention list. */
export interface AttentionItem {
  kind: AttentionKind;
  /** `danger`: something is broken or stopped; `warning`: something is due. */
  severity: "danger" | "warning";
  /** The badge: what happened, in a word or two. */
  label: string;
  /** What it is about (a project and version, an endpoint, a key). */
  subject: string;
  /** Why, or what it waits for. */
  detail: string;
  /** Where it is dealt with. */
  href: string;
  /** The route that page is (for the role check). */
  route: string;
}

/** The lines for `role`, the most urgent kinds first. */
export async function needsAttention(
  store: Store,
  { role, nowMs }: { role: AdminRole | undefined; nowMs: number },
): Promise<AttentionItem[]> {
  const [rollouts, gates, rollbacks, webhooks, signing, keys, tokens] = await Promise.all([
    listRollouts(store),
    listRolloutGates(store),
    listRollbacks(store),
    failingWebhooks(store),
    stuckSigning(store),
    expiringKeys(store, nowMs),
    expiringTokens(store, nowMs),
  ]);
  const projectIds = [...new Set([...rollouts.map((r) => r.project_id), ...rollbacks.keys()])];
  const projects = new Map(
    (await getProjectsByIds(store, projectIds)).map((project) => [project.id, project]),
  );
  const gatesOf = new Map(gates.map((state) => [state.project_id, state]));

  const halted: AttentionItem[] = [];
  const gated: AttentionItem[] = [];
  await Promise.all(rollouts.map(async (rollout) => {
    const project = projects.get(rollout.project_id);
    if (project === undefined || project.state !== "active") return;
    const release = await getRelease(store, rollout.release_id);
    const subject = `${project.name} ${release?.version ?? `release ${rollout.release_id}`}`;
    const href = `/admin/projects/${project.slug}/rollout#rollout`;
    const state = gatesOf.get(rollout.project_id);
    const own = state !== undefined && state.release_id === rollout.release_id &&
      state.completed_at === null;
    if (rollout.halted) {
      halted.push({
        kind: "halted",
        severity: "danger",
        label: "Rollout halted",
        subject: `${subject} at ${rollout.percentage}%`,
        detail: own && state.halt_reason !== null
          ? `by its gates: ${state.halt_reason}`
          : "by hand: resume or end it",
        href,
        route: "GET /admin/projects/:slug/rollout",
      });
      return;
    }
    const verdict = (await readStage(store, { state: state ?? null, rollout, nowMs }))?.verdict;
    if (verdict?.action !== "wait") return;
    gated.push({
      kind: "gated",
      severity: "warning",
      label: "Waiting on a gate",
      subject: `${subject} at ${rollout.percentage}%`,
      detail: `waits for ${verdict.waiting}`,
      href,
      route: "GET /admin/projects/:slug/rollout",
    });
  }));

  const rolledBack: AttentionItem[] = [];
  await Promise.all([...rollbacks].map(async ([projectId, rollback]) => {
    const project = projects.get(projectId);
    if (project === undefined || project.state !== "active") return;
    const view = await getLatestView(store, projectId);
    // In force while its clients are still offered the release it went back to.
    if (view.release?.id !== rollback.to_id) return;
    if (view.rollout !== null && view.rollout.record.release_id !== rollback.release_id) return;
    const to = view.release;
    rolledBack.push({
      kind: "rolled-back",
      severity: "danger",
      label: "Rolled back",
      subject: `${project.name} ${rollback.version}`,
      detail: `clients are offered ${to.version} until a newer release ships`,
      href: `/admin/projects/${project.slug}/rollout#release-safety`,
      route: "GET /admin/projects/:slug/rollout",
    });
  }));

  const byName = (a: AttentionItem, b: AttentionItem) => a.subject.localeCompare(b.subject);
  const lines = [
    ...summed(halted.sort(byName), "halted"),
    ...summed(rolledBack.sort(byName), "rolled-back"),
    ...summed(webhooks, "webhook"),
    ...summed(signing, "signing"),
    ...summed(gated.sort(byName), "gated"),
    ...summed(keys, "key"),
    ...summed(tokens, "token"),
  ];
  return lines.filter((item) => can(role, item.route));
}

/** The lines of a kind, or one line that counts them when there are more than LINES_PER_KIND. */
function summed(items: AttentionItem[], kind: AttentionKind): AttentionItem[] {
  if (items.length <= LINES_PER_KIND) return items;
  const first = items[0];
  const SUMS: Record<AttentionKind, [string, string]> = {
    halted: ["rollouts are halted", "/admin/projects"],
    gated: ["rollouts wait on their gates", "/admin/projects"],
    "rolled-back": ["releases are rolled back", "/admin/projects"],
    webhook: ["webhook endpoints are failing", "/admin/webhooks"],
    signing: ["projects' TUF metadata could not be signed", "/admin/signing-keys#tuf"],
    key: [`API keys expire within ${EXPIRY_NOTICE_DAYS} days`, "/admin/api-keys"],
    token: [`publish tokens expire within ${EXPIRY_NOTICE_DAYS} days`, "/admin/publish-tokens"],
  };
  const [text, href] = SUMS[kind];
  return [{
    ...first,
    subject: `${items.length} ${text}`,
    detail: `the first: ${first.subject}`,
    href,
    route: `GET ${href.replace(/#.*/, "")}`,
  }];
}

async function failingWebhooks(store: Store): Promise<AttentionItem[]> {
  const [endpoints, health] = await Promise.all([
    listWebhookEndpoints(store),
    listWebhookEndpointHealth(store),
  ]);
  return endpoints.flatMap((endpoint) => {
    const latest = health.get(endpoint.id);
    if (latest === undefined || latest.ok) return [];
    const answer = latest.error ??
      (latest.status === null ? "no answer" : `answered ${latest.status}`);
    return [{
      kind: "webhook" as const,
      severity: "danger" as const,
      label: "Webhook failing",
      subject: endpoint.url,
      detail: `${answer} (the latest delivery, ${latest.event})`,
      href: `/admin/webhooks/${endpoint.id}`,
      route: "GET /admin/webhooks/:id",
    }];
  });
}

async function stuckSigning(store: Store): Promise<AttentionItem[]> {
  const status = await getTufRefreshStatus(store);
  return (status?.failures ?? []).map((failure) => ({
    kind: "signing" as const,
    severity: "danger" as const,
    label: "Signing stuck",
    subject: `TUF metadata of ${failure.project}`,
    detail: `could not be signed: ${failure.error}`,
    href: "/admin/signing-keys#tuf",
    route: "GET /admin/signing-keys",
  }));
}

function expiryWindow(nowMs: number) {
  return {
    from: new Date(nowMs).toISOString(),
    until: new Date(nowMs + EXPIRY_NOTICE_DAYS * 86_400_000).toISOString(),
  };
}

/** "in 3 days", "in 5 hours", "within the hour". */
function inTime(iso: string, nowMs: number): string {
  const hours = (Date.parse(iso) - nowMs) / 3_600_000;
  if (hours >= 48) return `in ${Math.round(hours / 24)} days`;
  if (hours >= 2) return `in ${Math.floor(hours)} hours`;
  return "within the hour";
}

async function expiringKeys(store: Store, nowMs: number): Promise<AttentionItem[]> {
  const found = await listKeysExpiringBetween(store, {
    ...expiryWindow(nowMs),
    limit: LINES_PER_KIND + 1,
  });
  const keys = await Promise.all(found.map(({ keyId }) => getApiKey(store, keyId)));
  return found.map(({ keyId, expiresAt }, i) => ({
    kind: "key" as const,
    severity: "warning" as const,
    label: "Key expires",
    subject: `API key ${keys[i]?.name ?? keyId}`,
    detail: `expires ${inTime(expiresAt, nowMs)}; clients using it will be refused`,
    href: `/admin/api-keys/${keyId}`,
    route: "GET /admin/api-keys/:id",
  }));
}

async function expiringTokens(store: Store, nowMs: number): Promise<AttentionItem[]> {
  const { from, until } = expiryWindow(nowMs);
  return (await listPublishTokens(store))
    .filter((token) =>
      token.active && token.expires_at !== null && token.expires_at >= from &&
      token.expires_at <= until
    )
    .sort((a, b) => a.expires_at!.localeCompare(b.expires_at!))
    .map((token) => ({
      kind: "token" as const,
      severity: "warning" as const,
      label: "Token expires",
      subject: `publish token ${token.name}`,
      detail: `expires ${inTime(token.expires_at!, nowMs)}; CI using it will be refused`,
      href: "/admin/publish-tokens",
      route: "GET /admin/publish-tokens",
    }));
}
