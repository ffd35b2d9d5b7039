/**
 * A webhook receiver for tests: a real HTTP server on 127.0.0.1 (docs/webhooks.md), an endpoint
 * that subscribes it, and the in-process worker that delivers to it. It verifies every delivery
 * with the Standard Webhooks library (npm standardwebhooks), as a receiver in the field would.
 */
import { Webhook } from "standardwebhooks";
import { createWebhookEndpoint, type WebhookEndpoint } from "../src/webhooks/outbox.ts";
import { getApiKey } from "../src/credentials/api_keys.ts";
import type { Store } from "../src/kv/store.ts";
import {
  startWebhookWorker,
  type WebhookWorker,
  type WebhookWorkerOptions,
} from "../src/webhooks/worker.ts";

export type Receiver = ReturnType<typeof startReceiver>;

/** One delivery as the receiver got it. */
export interface ReceivedDelivery {
  id: string;
  event: string;
  body: unknown;
  /** Whether the library verified it with the receiver's secret of that moment. */
  valid: boolean;
  raw: string;
  headers: Record<string, string>;
}

/** Whether the Standard Webhooks library accepts `delivery` under `secret` (false if it throws). */
export function verifiesWith(secret: string, delivery: ReceivedDelivery): boolean {
  try {
    new Webhook(secret).verify(delivery.raw, delivery.headers);
    return true;
  } catch {
    return false;
  }
}

/** A receiver on 127.0.0.1 that verifies each delivery with the Standard Webhooks library. */
export function startReceiver(answer: () => number = () => 204) {
  const received: ReceivedDelivery[] = [];
  let secret = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const raw = await req.text();
    const status = answer();
    const delivery: ReceivedDelivery = {
      id: req.headers.get("webhook-id") ?? "",
      event: req.headers.get("webhook-event") ?? "",
      body: JSON.parse(raw),
      valid: false,
      raw,
      headers: Object.fromEntries(req.headers),
    };
    delivery.valid = secret !== "" && verifiesWith(secret, delivery);
    received.push(delivery);
    return new Response(null, { status });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    received,
    setSecret: (value: string) => {
      secret = value;
    },
    close: () => server.shutdown(),
  };
}

/**
 * Registers an endpoint for the receiver's URL and `events` straight in `store` and gives the
 * receiver its secret, so that it can check the signatures.
 */
export async function subscribeReceiver(
  store: Store,
  receiver: Receiver,
  { events, createdBy = "admin" }: { events: string[]; createdBy?: string },
): Promise<WebhookEndpoint> {
  const endpoint = await createWebhookEndpoint(store, {
    url: receiver.url,
    events,
    created_by: createdBy,
  });
  receiver.setSecret(endpoint.secret!);
  return endpoint;
}

/**
 * The delivery worker in process, driven by its `tick()`: it polls once a minute by itself,
 * gives a delivery 2 s, and may deliver to 127.0.0.1 (the receiver) unless `options` say else.
 */
export function startTestWorker(
  store: Store,
  options: Partial<Omit<WebhookWorkerOptions, "store">> = {},
): WebhookWorker {
  return startWebhookWorker({
    store,
    allowPrivate: true,
    timeoutMs: 2000,
    pollMs: 60_000,
    keyName: async (keyId) => (await getApiKey(store, keyId))?.name ?? null,
    ...options,
  });
}
