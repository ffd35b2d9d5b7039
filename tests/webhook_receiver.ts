/**
 * A webhook receiver for tests: a real HTTP server on 127.0.0.1 (docs/webhooks.md), an endpoint
 * that subscribes it, and the in-process worker that delivers to it.
 */
import { createHmac } from "node:crypto";
import { createWebhookEndpoint, type WebhookEndpoint } from "../src/store/mod.ts";
import {
  startWebhookWorker,
  type WebhookWorker,
  type WebhookWorkerOptions,
} from "../src/webhooks/worker.ts";

export type Receiver = ReturnType<typeof startReceiver>;

/** A receiver on 127.0.0.1 that checks each delivery's signature with its own HMAC code. */
export function startReceiver(answer: () => number = () => 204) {
  const received: { id: string; event: string; body: unknown; valid: boolean }[] = [];
  let secret = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.text();
    const id = req.headers.get("webhook-id") ?? "";
    const timestamp = req.headers.get("webhook-timestamp") ?? "";
    const expected = "sha256=" +
      createHmac("sha256", secret).update(`${id}.${timestamp}.${body}`).digest("hex");
    const status = answer();
    received.push({
      id,
      event: req.headers.get("webhook-event") ?? "",
      body: JSON.parse(body),
      valid: req.headers.get("webhook-signature") === expected &&
        Math.abs(Date.now() / 1000 - Number(timestamp)) < 300,
    });
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
 * Registers an endpoint for the receiver's URL and `events` straight in `kv` and gives the
 * receiver its secret, so that it can check the signatures.
 */
export async function subscribeReceiver(
  kv: Deno.Kv,
  receiver: Receiver,
  { events, createdBy = "admin" }: { events: string[]; createdBy?: string },
): Promise<WebhookEndpoint> {
  const endpoint = await createWebhookEndpoint(kv, {
    url: receiver.url,
    events,
    created_by: createdBy,
  });
  receiver.setSecret(endpoint.secret);
  return endpoint;
}

/**
 * The delivery worker in process, driven by its `tick()`: it polls once a minute by itself,
 * gives a delivery 2 s, and may deliver to 127.0.0.1 (the receiver) unless `options` say else.
 */
export function startTestWorker(
  kv: Deno.Kv,
  options: Partial<Omit<WebhookWorkerOptions, "kv">> = {},
): WebhookWorker {
  return startWebhookWorker({
    kv,
    allowPrivate: true,
    timeoutMs: 2000,
    pollMs: 60_000,
    ...options,
  });
}
