/**
 * Webhooks' KV records (docs/webhooks.md): the endpoints with their signing
 * secrets, the events waiting to be fanned out, the outbox of due deliveries
 * (kept in KV, so a restart loses none) and each endpoint's delivery log.
 *
 * Exactly one instance delivers each event: fanning an event out deletes it in
 * the same commit that writes its deliveries, and an instance takes a due
 * delivery by moving its outbox entry to the end of a lease (a checked commit);
 * an instance that dies mid-delivery leaves the entry due again when the lease
 * ends.
 */
import { isSigningSecret, newWebhookSecret } from "../lib/webhook_secret.ts";
import { commitWithRetry, now, retryWhileLocked } from "../kv/atomic.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import {
  apiKeyExpiryPrefix,
  releaseDownloadsPrefix,
  releaseKey,
  webhookDeliveriesPrefix,
  webhookDeliveryKey,
  webhookDownloadBaselineKey,
  webhookDownloadMarkKey,
  webhookDownloadMarksPrefix,
  webhookEndpointHealthKey,
  webhookEndpointHealthPrefix,
  webhookEndpointKey,
  webhookEndpointsPrefix,
  webhookEventKey,
  webhookEventsPrefix,
  webhookExpiryNoticeKey,
  webhookOutboxKey,
  webhookOutboxPrefix,
} from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export const WEBHOOK_EVENT_KINDS = [
  "release.published",
  "release.archived",
  "release.deleted",
  "key.created",
  "key.disabled",
  "key.expiring",
  "rollout.changed",
  "download.completed",
] as const;

export type WebhookEventKind = typeof WEBHOOK_EVENT_KINDS[number];

/**
 * The event of a test ping an admin sends from an endpoint's page: sent at once to that endpoint
 * only, never subscribed to.
 */
export const WEBHOOK_TEST_EVENT = "webhook.test";

/** The event a delivery carries: a subscribed kind, or the test ping. */
export type WebhookDeliveryEvent = WebhookEventKind | typeof WEBHOOK_TEST_EVENT;

const KINDS: ReadonlySet<string> = new Set(WEBHOOK_EVENT_KINDS);

export function isWebhookEventKind(value: string): value is WebhookEventKind {
  return KINDS.has(value);
}

/** The body of a delivery: `id` is the event's id (the same in every retry and "send again"). */
export interface WebhookEventBody {
  id: string;
  type: WebhookDeliveryEvent;
  created_at: string;
  data: Record<string, unknown>;
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  events: WebhookEventKind[];
  /**
   * The HMAC-SHA256 secret (`whsec_` and the base64 of 32 random bytes): kept so
   * that deliveries can be signed, shown once when it is made. Null when a
   * backup left it out: deliveries fail (and are retried) until an admin sets
   * a new one.
   */
  secret: string | null;
  /** Secrets replaced by a new one that still sign deliveries until `until`. */
  previous_secrets?: PreviousWebhookSecret[];
  created_at: string;
  created_by: string;
}

export interface PreviousWebhookSecret {
  secret: string;
  until: string;
}

/** How long a replaced secret still signs, unless the admin ends it at once. */
const WEBHOOK_SECRET_OVERLAP_MS = 24 * 3_600_000;

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookDelivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  event: WebhookDeliveryEvent;
  /** The JSON body, exactly as sent (and signed). */
  body: string;
  created_at: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  /** The start of the receiver's last answer body (absent in records of earlier versions). */
  last_answer?: string | null;
  next_attempt_at: string | null;
}

/**
 * The outcome of an endpoint's latest delivery attempt, written with it: an endpoint whose
 * latest attempt failed is failing (its list row and the dashboard say so).
 */
export interface WebhookEndpointHealth {
  endpoint_id: string;
  ok: boolean;
  at: string;
  delivery_id: string;
  event: WebhookDeliveryEvent;
  status: number | null;
  error: string | null;
}

export interface OutboxEntry {
  delivery_id: string;
  endpoint_id: string;
}

/** At most this many endpoints: each event's deliveries are written in one commit. */
export const MAX_WEBHOOK_ENDPOINTS = 50;
/** Finished deliveries stay in the log this long. */
const LOG_KEPT_MS = 30 * 86_400_000;

/** A new id that sorts by time (the delivery log lists newest first). */
export function newWebhookId(): string {
  const random = crypto.getRandomValues(new Uint8Array(6));
  return Date.now().toString(36).padStart(9, "0") +
    Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The secrets that sign a delivery made at `nowMs`: the endpoint's own first,
 * then the replaced ones whose overlap has not ended.
 */
export function signingSecretsOf(endpoint: WebhookEndpoint, nowMs: number): string[] {
  const previous = (endpoint.previous_secrets ?? [])
    .filter((entry) => Date.parse(entry.until) > nowMs)
    .map((entry) => entry.secret);
  return endpoint.secret === null ? previous : [endpoint.secret, ...previous];
}

/**
 * Gives an endpoint a new secret. With `keepPrevious` the replaced one (when
 * it can sign) still signs for WEBHOOK_SECRET_OVERLAP_MS (deliveries carry both signatures), so a
 * receiver can switch without missing a delivery; without it, it stops at once.
 */
export async function replaceWebhookSecret(
  store: Store,
  endpointId: string,
  { keepPrevious }: { keepPrevious: boolean },
): Promise<WebhookEndpoint> {
  const key = webhookEndpointKey(endpointId);
  return await commitWithRetry(async () => {
    const entry = await store.kv.get<WebhookEndpoint>(key);
    if (entry.value === null) throw new NotFoundError(`webhook endpoint ${endpointId}`);
    const nowMs = Date.now();
    const kept = keepPrevious
      ? (entry.value.previous_secrets ?? []).filter((p) => Date.parse(p.until) > nowMs)
      : [];
    // A secret that cannot sign (another form) is not worth keeping.
    if (keepPrevious && isSigningSecret(entry.value.secret)) {
      const until = new Date(nowMs + WEBHOOK_SECRET_OVERLAP_MS).toISOString();
      kept.unshift({ secret: entry.value.secret, until });
    }
    const endpoint: WebhookEndpoint = {
      ...entry.value,
      secret: newWebhookSecret(),
      previous_secrets: kept,
    };
    return {
      commit: await store.kv.atomic().check(entry).set(key, endpoint).commit(),
      value: endpoint,
    };
  });
}

/** An endpoint record as a backup without secrets holds it. */
export function withoutWebhookSecrets(endpoint: WebhookEndpoint): WebhookEndpoint {
  return { ...endpoint, secret: null, previous_secrets: [] };
}

/** An endpoint's URL and events as a form gives them, checked; a ValidationError names the field. */
function checkEndpointFields(input: { url: string; events: string[] }) {
  const url = input.url.trim();
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError("url", "enter a full URL, e.g. https://example.com/hooks");
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new ValidationError("url", "the URL must start with https:// or http://");
  }
  if (url.length > 2000) throw new ValidationError("url", "the URL is too long");
  const events = [...new Set(input.events)];
  if (events.length === 0) throw new ValidationError("events", "choose at least one event");
  const unknown = events.find((e) => !isWebhookEventKind(e));
  if (unknown !== undefined) throw new ValidationError("events", `unknown event ${unknown}`);
  return { url, events: events as WebhookEventKind[] };
}

export async function createWebhookEndpoint(
  store: Store,
  input: { url: string; events: string[]; created_by: string },
): Promise<WebhookEndpoint> {
  const { url, events } = checkEndpointFields(input);
  if ((await listWebhookEndpoints(store)).length >= MAX_WEBHOOK_ENDPOINTS) {
    throw new ValidationError("url", `at most ${MAX_WEBHOOK_ENDPOINTS} endpoints`);
  }
  const endpoint: WebhookEndpoint = {
    id: newWebhookId(),
    url,
    events,
    secret: newWebhookSecret(),
    created_at: now(),
    created_by: input.created_by,
  };
  const key = webhookEndpointKey(endpoint.id);
  return await commitWithRetry(async () => ({
    commit: await store.kv.atomic().check({ key, versionstamp: null }).set(key, endpoint).commit(),
    value: endpoint,
  }));
}

/**
 * Changes an endpoint's URL and events (its secret and log stay). Deliveries already queued go to
 * the new URL; events already fanned out stay queued whatever the new events. Returns the
 * endpoint before and after.
 */
export async function updateWebhookEndpoint(
  store: Store,
  endpointId: string,
  input: { url: string; events: string[] },
): Promise<{ before: WebhookEndpoint; after: WebhookEndpoint }> {
  const fields = checkEndpointFields(input);
  const key = webhookEndpointKey(endpointId);
  return await commitWithRetry(async () => {
    const entry = await store.kv.get<WebhookEndpoint>(key);
    if (entry.value === null) throw new NotFoundError(`webhook endpoint ${endpointId}`);
    const after: WebhookEndpoint = { ...entry.value, ...fields };
    return {
      commit: await store.kv.atomic().check(entry).set(key, after).commit(),
      value: { before: entry.value, after },
    };
  });
}

export async function getWebhookEndpoint(
  store: Store,
  endpointId: string,
): Promise<WebhookEndpoint | null> {
  return (await store.kv.get<WebhookEndpoint>(webhookEndpointKey(endpointId))).value;
}

/** Every endpoint, oldest first. */
export async function listWebhookEndpoints(store: Store): Promise<WebhookEndpoint[]> {
  const endpoints: WebhookEndpoint[] = [];
  for await (const entry of store.kv.list<WebhookEndpoint>({ prefix: webhookEndpointsPrefix() })) {
    endpoints.push(entry.value);
  }
  return endpoints;
}

/** Removes an endpoint and its health; its pending deliveries are dropped when they come due. */
export async function deleteWebhookEndpoint(store: Store, endpointId: string): Promise<void> {
  const entry = await store.kv.get<WebhookEndpoint>(webhookEndpointKey(endpointId));
  if (entry.value === null) throw new NotFoundError(`webhook endpoint ${endpointId}`);
  await retryWhileLocked(() =>
    store.kv.atomic().delete(webhookEndpointKey(endpointId))
      .delete(webhookEndpointHealthKey(endpointId)).commit()
  );
}

/** Every endpoint's latest attempt, by endpoint id (endpoints without an attempt have none). */
export async function listWebhookEndpointHealth(
  store: Store,
): Promise<Map<string, WebhookEndpointHealth>> {
  const health = new Map<string, WebhookEndpointHealth>();
  const entries = store.kv.list<WebhookEndpointHealth>({ prefix: webhookEndpointHealthPrefix() });
  for await (const entry of entries) health.set(entry.value.endpoint_id, entry.value);
  return health;
}

/** The health record of an attempt on `delivery` (after it). */
function healthOf(delivery: WebhookDelivery): WebhookEndpointHealth {
  return {
    endpoint_id: delivery.endpoint_id,
    ok: delivery.status === "delivered",
    at: delivery.last_attempt_at ?? now(),
    delivery_id: delivery.id,
    event: delivery.event,
    status: delivery.last_status,
    error: delivery.last_error,
  };
}

/** A test ping's body: a `webhook.test` event naming the endpoint and who sent it. */
export function webhookTestBody(endpoint: WebhookEndpoint, sentBy: string): string {
  return JSON.stringify(
    {
      id: newWebhookId(),
      type: WEBHOOK_TEST_EVENT,
      created_at: now(),
      data: { endpoint: { id: endpoint.id, url: endpoint.url }, sent_by: sentBy },
    } satisfies WebhookEventBody,
  );
}

/**
 * Logs a test ping that was just sent (one attempt, never retried) with its outcome, and makes it
 * the endpoint's health.
 */
export async function recordWebhookTest(
  store: Store,
  input: {
    endpointId: string;
    deliveryId: string;
    body: string;
    outcome: { ok: boolean; status: number | null; error: string | null; answer: string | null };
  },
): Promise<WebhookDelivery> {
  const at = now();
  const event = JSON.parse(input.body) as WebhookEventBody;
  const delivery: WebhookDelivery = {
    id: input.deliveryId,
    endpoint_id: input.endpointId,
    event_id: event.id,
    event: WEBHOOK_TEST_EVENT,
    body: input.body,
    created_at: at,
    status: input.outcome.ok ? "delivered" : "failed",
    attempts: 1,
    last_attempt_at: at,
    last_status: input.outcome.status,
    last_error: input.outcome.error,
    last_answer: input.outcome.answer,
    next_attempt_at: null,
  };
  await retryWhileLocked(() =>
    store.kv.atomic()
      .set(webhookDeliveryKey(input.endpointId, delivery.id), delivery, { expireIn: LOG_KEPT_MS })
      .set(webhookEndpointHealthKey(input.endpointId), healthOf(delivery))
      .commit()
  );
  return delivery;
}

/** One delivery of an endpoint's log, or null. */
export async function getWebhookDelivery(
  store: Store,
  { endpointId, deliveryId }: { endpointId: string; deliveryId: string },
): Promise<WebhookDelivery | null> {
  return (await store.kv.get<WebhookDelivery>(webhookDeliveryKey(endpointId, deliveryId))).value;
}

function eventBody(kind: WebhookEventKind, data: Record<string, unknown>): WebhookEventBody {
  return { id: newWebhookId(), type: kind, created_at: now(), data };
}

/**
 * Adds an event to a write's commit (the release and key writes that cause
 * events): it is delivered only if that write commits, and the write does not
 * wait for any delivery.
 */
export function addWebhookEvent(
  op: Deno.AtomicOperation,
  kind: WebhookEventKind,
  data: Record<string, unknown>,
): Deno.AtomicOperation {
  const event = eventBody(kind, data);
  return op.set(webhookEventKey(event.id), event);
}

/** Records an event on its own (right after a write that could not carry it). */
export async function emitWebhookEvent(
  store: Store,
  kind: WebhookEventKind,
  data: Record<string, unknown>,
): Promise<void> {
  await commitWithRetry(async () => ({
    commit: await addWebhookEvent(store.kv.atomic(), kind, data).commit(),
    value: undefined,
  }));
}

/**
 * Turns waiting events into one delivery per subscribed endpoint, each due now.
 * An event is taken by one instance only (its deletion is checked). Returns
 * how many deliveries were queued.
 */
export async function fanOutWebhookEvents(store: Store, limit = 50): Promise<number> {
  const endpoints = await listWebhookEndpoints(store);
  let queued = 0;
  for await (
    const entry of store.kv.list<WebhookEventBody>({ prefix: webhookEventsPrefix() }, { limit })
  ) {
    const event = entry.value;
    const targets = endpoints.filter((endpoint) =>
      (endpoint.events as readonly string[]).includes(event.type)
    );
    const op = store.kv.atomic().check(entry).delete(entry.key);
    for (const endpoint of targets) queueDelivery(op, endpoint.id, event);
    const ok = await retryWhileLocked(() => op.commit()).then((c) => c.ok, () => false);
    if (ok) queued += targets.length;
  }
  return queued;
}

function queueDelivery(
  op: Deno.AtomicOperation,
  endpointId: string,
  event: WebhookEventBody,
): WebhookDelivery {
  const at = Date.now();
  const delivery: WebhookDelivery = {
    id: newWebhookId(),
    endpoint_id: endpointId,
    event_id: event.id,
    event: event.type,
    body: JSON.stringify(event),
    created_at: new Date(at).toISOString(),
    status: "pending",
    attempts: 0,
    last_attempt_at: null,
    last_status: null,
    last_error: null,
    next_attempt_at: new Date(at).toISOString(),
  };
  const outbox: OutboxEntry = { delivery_id: delivery.id, endpoint_id: endpointId };
  op.set(webhookDeliveryKey(endpointId, delivery.id), delivery)
    .set(webhookOutboxKey(at, delivery.id), outbox);
  return delivery;
}

/** A delivery taken from the outbox by this instance until `leaseKey` is due again. */
export interface ClaimedDelivery {
  delivery: WebhookDelivery;
  endpoint: WebhookEndpoint | null;
  leaseKey: Deno.KvKey;
  leaseVersionstamp: string;
}

/**
 * Takes up to `limit` due deliveries: each is moved to `nowMs + leaseMs` in a
 * checked commit, so another instance sees it neither taken twice nor lost.
 */
export async function claimDueDeliveries(
  store: Store,
  options: { nowMs: number; leaseMs: number; limit: number },
): Promise<ClaimedDelivery[]> {
  const claimed: ClaimedDelivery[] = [];
  const due = store.kv.list<OutboxEntry>({
    start: webhookOutboxPrefix(),
    end: webhookOutboxKey(options.nowMs + 1, ""),
  }, { limit: options.limit });
  for await (const entry of due) {
    const { delivery_id, endpoint_id } = entry.value;
    const leaseKey = webhookOutboxKey(options.nowMs + options.leaseMs, delivery_id);
    const commit = await retryWhileLocked(() =>
      store.kv.atomic().check(entry).delete(entry.key).set(leaseKey, entry.value).commit()
    ).catch(() => ({ ok: false as const }));
    if (!commit.ok) continue;
    const [delivery, endpoint] = await Promise.all([
      store.kv.get<WebhookDelivery>(webhookDeliveryKey(endpoint_id, delivery_id)),
      store.kv.get<WebhookEndpoint>(webhookEndpointKey(endpoint_id)),
    ]);
    if (delivery.value === null) {
      await retryWhileLocked(() => store.kv.delete(leaseKey));
      continue;
    }
    claimed.push({
      delivery: delivery.value,
      endpoint: endpoint.value,
      leaseKey,
      leaseVersionstamp: commit.versionstamp,
    });
  }
  return claimed;
}

/**
 * Records an attempt's outcome: delivered, failed for good (`nextAtMs` null),
 * or due again at `nextAtMs`. A lease lost in the meantime (this instance was
 * too slow) leaves the record to the instance that holds it.
 */
export async function finishDeliveryAttempt(
  store: Store,
  claim: ClaimedDelivery,
  outcome: {
    ok: boolean;
    status: number | null;
    error: string | null;
    answer?: string | null;
    nextAtMs: number | null;
  },
): Promise<WebhookDelivery | null> {
  const { delivery } = claim;
  const attemptedAt = now();
  const status: WebhookDeliveryStatus = outcome.ok
    ? "delivered"
    : outcome.nextAtMs === null
    ? "failed"
    : "pending";
  const after: WebhookDelivery = {
    ...delivery,
    status,
    attempts: delivery.attempts + 1,
    last_attempt_at: attemptedAt,
    last_status: outcome.status,
    last_error: outcome.error,
    last_answer: outcome.answer ?? null,
    next_attempt_at: status === "pending" ? new Date(outcome.nextAtMs!).toISOString() : null,
  };
  const op = store.kv.atomic()
    .check({ key: claim.leaseKey, versionstamp: claim.leaseVersionstamp })
    .delete(claim.leaseKey)
    .set(
      webhookDeliveryKey(delivery.endpoint_id, delivery.id),
      after,
      status === "pending" ? undefined : { expireIn: LOG_KEPT_MS },
    );
  // A delivery to a removed endpoint leaves no health behind.
  if (claim.endpoint !== null) {
    op.set(webhookEndpointHealthKey(delivery.endpoint_id), healthOf(after));
  }
  if (status === "pending") {
    op.set(webhookOutboxKey(outcome.nextAtMs!, delivery.id), {
      delivery_id: delivery.id,
      endpoint_id: delivery.endpoint_id,
    });
  }
  const commit = await retryWhileLocked(() => op.commit());
  return commit.ok ? after : null;
}

/** The delivery log of an endpoint, newest first. */
export async function listWebhookDeliveries(
  store: Store,
  endpointId: string,
  limit = 50,
): Promise<WebhookDelivery[]> {
  const deliveries: WebhookDelivery[] = [];
  const entries = store.kv.list<WebhookDelivery>({ prefix: webhookDeliveriesPrefix(endpointId) }, {
    limit,
    reverse: true,
  });
  for await (const entry of entries) deliveries.push(entry.value);
  return deliveries;
}

/** "Send again": a new delivery of the same event (same body, new delivery id), due now. */
export async function resendWebhookDelivery(
  store: Store,
  options: { endpointId: string; deliveryId: string },
): Promise<WebhookDelivery> {
  const entry = await store.kv.get<WebhookDelivery>(
    webhookDeliveryKey(options.endpointId, options.deliveryId),
  );
  if (entry.value === null) throw new NotFoundError(`delivery ${options.deliveryId}`);
  const event = JSON.parse(entry.value.body) as WebhookEventBody;
  return await commitWithRetry(async () => {
    const op = store.kv.atomic();
    const delivery = queueDelivery(op, options.endpointId, event);
    return { commit: await op.commit(), value: delivery };
  });
}

/**
 * `key.expiring` for every enabled key that expires before `untilIso` and was
 * not announced yet for that expiry (a checked marker: one event, whichever
 * instance runs the check). Returns how many events were added.
 */
export async function announceExpiringKeys(
  store: Store,
  options: { nowIso: string; untilIso: string; names: (keyId: number) => Promise<string | null> },
): Promise<number> {
  let added = 0;
  const expiring = store.kv.list<boolean>({
    start: [...apiKeyExpiryPrefix(), options.nowIso],
    end: [...apiKeyExpiryPrefix(), options.untilIso],
  });
  for await (const entry of expiring) {
    if (entry.value !== true) continue;
    const [, expiresAt, keyId] = entry.key as [string, string, number];
    const marker = webhookExpiryNoticeKey(keyId, expiresAt);
    const op = store.kv.atomic().check({ key: marker, versionstamp: null })
      .set(marker, true, { expireIn: 14 * 86_400_000 });
    addWebhookEvent(op, "key.expiring", {
      key: { id: keyId, name: await options.names(keyId), expires_at: expiresAt },
    });
    const commit = await retryWhileLocked(() => op.commit()).catch(() => ({ ok: false }));
    if (commit.ok) added++;
  }
  return added;
}

/**
 * `download.completed` in batches (docs/webhooks.md "Events"): compares each
 * release's download total (`release_downloads`, which counting a download
 * already keeps) with the total last announced, and adds one event per release
 * whose total grew, with the number of downloads since. A download costs
 * nothing more than its count; this runs every minute or so. Each release's
 * mark moves in the same checked commit as its event, so with several
 * instances each batch is announced once. Without a subscribed endpoint
 * nothing is announced and the marks are dropped: a later subscriber hears of
 * the downloads after it subscribed, never of the history. Returns how many
 * events were added.
 */
export async function announceDownloads(store: Store): Promise<number> {
  const subscribed = (await listWebhookEndpoints(store)).some((endpoint) =>
    endpoint.events.includes("download.completed")
  );
  const baseline = await store.kv.get<boolean>(webhookDownloadBaselineKey());
  if (!subscribed) {
    if (baseline.value === null) return 0;
    for await (const entry of store.kv.list({ prefix: webhookDownloadMarksPrefix() })) {
      await retryWhileLocked(() => store.kv.delete(entry.key));
    }
    await retryWhileLocked(() => store.kv.delete(webhookDownloadBaselineKey()));
    return 0;
  }
  const marks = new Map<number, Deno.KvEntry<Deno.KvU64>>();
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: webhookDownloadMarksPrefix() })) {
    marks.set(entry.key[1] as number, entry);
  }
  const silent = baseline.value === null;
  let added = 0;
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: releaseDownloadsPrefix() })) {
    const releaseId = entry.key[1] as number;
    const total = entry.value.value;
    const mark = marks.get(releaseId);
    marks.delete(releaseId);
    const previous = mark?.value.value ?? 0n;
    if (total <= previous) continue;
    const markKey = webhookDownloadMarkKey(releaseId);
    const op = store.kv.atomic().check(mark ?? { key: markKey, versionstamp: null })
      .set(markKey, new Deno.KvU64(total));
    if (!silent) {
      const release = (await store.kv.get<ReleaseEventFields>(releaseKey(releaseId))).value;
      if (release === null) continue;
      addWebhookEvent(op, "download.completed", {
        ...releaseEventData(release),
        downloads: Number(total - previous),
        total_downloads: Number(total),
      });
    }
    const commit = await retryWhileLocked(() => op.commit()).catch(() => ({ ok: false }));
    if (commit.ok && !silent) added++;
  }
  // Marks of deleted releases.
  for (const mark of marks.values()) {
    await retryWhileLocked(() => store.kv.atomic().check(mark).delete(mark.key).commit());
  }
  if (silent) await retryWhileLocked(() => store.kv.set(webhookDownloadBaselineKey(), true));
  return added;
}

/** What an event of a release carries of it (a `Release` passes). */
export interface ReleaseEventFields {
  id: number;
  project_id: number;
  version: string;
  state: string;
}

/** The `release` member of a release's event. */
export function releaseEventData(release: ReleaseEventFields): Record<string, unknown> {
  return {
    release: {
      id: release.id,
      project_id: release.project_id,
      version: release.version,
      state: release.state,
    },
  };
}
