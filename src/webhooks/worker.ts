/**
 * The background delivery of webhooks (docs/webhooks.md "Delivery and
 * retries"): every instance polls the KV, fans waiting events out to their
 * endpoints, takes due deliveries under a lease and sends them; a failed
 * attempt is due again after a growing pause, for a little over 24 hours.
 */
import {
  announceDownloads,
  announceExpiringKeys,
  claimDueDeliveries,
  type ClaimedDelivery,
  fanOutWebhookEvents,
  finishDeliveryAttempt,
  signingSecretsOf,
} from "./outbox.ts";
import type { Resolver } from "./address_guard.ts";
import { attemptDelivery } from "./send.ts";
import type { Store } from "../kv/store.ts";

/**
 * The pause after the n-th failed attempt; after the last, the delivery fails for good.
 * Together about 29 hours.
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = [
  10,
  30,
  120,
  300,
  900,
  1800,
  3600,
  7200,
  10_800,
  14_400,
  21_600,
  21_600,
  21_600,
];

/** When the delivery that failed its `attempts`-th attempt is due again, or null: no more. */
export function nextAttemptAt(attempts: number, nowMs: number): number | null {
  const delay = RETRY_DELAYS_SECONDS[attempts - 1];
  return delay === undefined ? null : nowMs + delay * 1000;
}

export interface WebhookWorkerOptions {
  store: Store;
  allowPrivate: boolean;
  timeoutMs: number;
  /** How often the outbox is read. */
  pollMs?: number;
  /** How often keys expiring within 7 days are announced. */
  expiryCheckMs?: number;
  /** How often the downloads since the last batch are announced (`download.completed`). */
  downloadBatchMs?: number;
  resolve?: Resolver;
  /**
   * An API key's name for its `key.expiring` event, or null when it is gone:
   * the credentials' lookup, passed in where the worker is made.
   */
  keyName: (keyId: number) => Promise<string | null>;
  report?: (
    level: "info" | "warn",
    message: string,
    fields?: Record<string, string | number | boolean | undefined>,
  ) => void;
}

export interface WebhookWorker {
  /**
   * One round: fan out, deliver what is due, announce expiring keys and the
   * latest downloads when it is time.
   */
  tick(): Promise<void>;
  stop(): void;
}

const EXPIRY_WINDOW_MS = 7 * 86_400_000;

/** Starts polling; `stop()` ends it (a delivery in flight finishes or its lease runs out). */
export function startWebhookWorker(options: WebhookWorkerOptions): WebhookWorker {
  const pollMs = options.pollMs ?? 1000;
  const expiryCheckMs = options.expiryCheckMs ?? 3_600_000;
  const downloadBatchMs = options.downloadBatchMs ?? 60_000;
  const leaseMs = options.timeoutMs + 30_000;
  const report = options.report ?? (() => {});
  let lastExpiryCheck = 0;
  let lastDownloadBatch = 0;
  let running: Promise<void> | null = null;

  async function deliver(claim: ClaimedDelivery): Promise<void> {
    const { delivery, endpoint } = claim;
    if (endpoint === null) {
      await finishDeliveryAttempt(options.store, claim, {
        ok: false,
        status: null,
        error: "the endpoint was removed",
        nextAtMs: null,
      });
      return;
    }
    const result = await attemptDelivery({
      url: endpoint.url,
      secrets: signingSecretsOf(endpoint, Date.now()),
      deliveryId: delivery.id,
      event: delivery.event,
      body: delivery.body,
      allowPrivate: options.allowPrivate,
      timeoutMs: options.timeoutMs,
      resolve: options.resolve,
    });
    const nextAtMs = result.ok || result.permanent
      ? null
      : nextAttemptAt(delivery.attempts + 1, Date.now());
    await finishDeliveryAttempt(options.store, claim, { ...result, nextAtMs });
    if (!result.ok) {
      report("warn", "webhook delivery failed", {
        endpoint_id: endpoint.id,
        delivery_id: delivery.id,
        event: delivery.event,
        attempt: delivery.attempts + 1,
        error: result.error ?? undefined,
        retry_at: nextAtMs === null ? "never" : new Date(nextAtMs).toISOString(),
      });
    }
  }

  async function round(): Promise<void> {
    const nowMs = Date.now();
    if (nowMs - lastExpiryCheck >= expiryCheckMs) {
      lastExpiryCheck = nowMs;
      await announceExpiringKeys(options.store, {
        nowIso: new Date(nowMs).toISOString(),
        untilIso: new Date(nowMs + EXPIRY_WINDOW_MS).toISOString(),
        names: options.keyName,
      });
    }
    if (nowMs - lastDownloadBatch >= downloadBatchMs) {
      lastDownloadBatch = nowMs;
      await announceDownloads(options.store);
    }
    await fanOutWebhookEvents(options.store);
    const claims = await claimDueDeliveries(options.store, {
      nowMs: Date.now(),
      leaseMs,
      limit: 20,
    });
    await Promise.all(claims.map(deliver));
  }

  function tick(): Promise<void> {
    running ??= round().catch((error) => {
      report("warn", `webhook round failed: ${String(error)}`);
    }).finally(() => {
      running = null;
    });
    return running;
  }

  const timer = setInterval(tick, pollMs);
  return {
    tick,
    stop: () => clearInterval(timer),
  };
}
