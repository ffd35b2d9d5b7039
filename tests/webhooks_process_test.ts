/**
 * Webhooks end to end on the real service (docs/webhooks.md "Delivery and
 * retries"): a delivery survives a restart, and three instances on one KV file
 * deliver each event once. The receiver is a real server on 127.0.0.1
 * (APP_WEBHOOKS_ALLOW_PRIVATE=true) that checks every signature.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { emitWebhookEvent } from "../src/webhooks/outbox.ts";
import { makeDataTempDir, startInstances, startServer } from "./server_process.ts";
import { type Receiver, startReceiver, subscribeReceiver } from "./webhook_receiver.ts";
import { waitFor } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

const ENV = { APP_WEBHOOKS_ALLOW_PRIVATE: "true", APP_WEBHOOKS_TIMEOUT_SECONDS: "5" };

/** Registers the receiver and queues `count` events straight into the service's KV file. */
async function queueEvents(
  dataDir: string,
  receiver: Receiver,
  count: number,
): Promise<void> {
  const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  const store = createStore(kv);
  try {
    await subscribeReceiver(store, receiver, { events: ["release.published"], createdBy: "test" });
    for (let i = 0; i < count; i++) {
      await emitWebhookEvent(store, "release.published", { release: { id: i + 1 } });
    }
  } finally {
    kv.close();
  }
}

Deno.test("a webhook delivery that failed is sent after a restart", async () => {
  const dataDir = await makeDataTempDir("webhooks-restart");
  let answers = 0;
  // The first attempt fails (503); the service stops before its retry is due.
  const receiver = startReceiver(() => answers++ === 0 ? 503 : 204);
  try {
    await queueEvents(dataDir, receiver, 0);
    const first = await startServer(dataDir, ENV);
    const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
    const store = createStore(kv);
    await emitWebhookEvent(store, "release.published", { release: { id: 42 } });
    kv.close();
    await waitFor("the first delivery", () => receiver.received.length === 1, 15_000);
    await first.stop();
    assert.equal(receiver.received.length, 1);

    await using _second = await startServer(dataDir, ENV);
    // The retry is due 10 s after the first attempt.
    await waitFor("the delivery after the restart", () => receiver.received.length === 2, 30_000);
    const [failed, delivered] = receiver.received;
    assert.equal(delivered.id, failed.id, "the same delivery, retried");
    assert.equal(delivered.valid, true);
    assert.deepEqual((delivered.body as { data: unknown }).data, { release: { id: 42 } });
  } finally {
    await receiver.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("three instances on one KV deliver each webhook event once", async () => {
  const dataDir = await makeDataTempDir("webhooks-three");
  const receiver = startReceiver();
  const servers = await startInstances(3, dataDir, ENV);
  try {
    await queueEvents(dataDir, receiver, 30);
    await waitFor("30 deliveries", () => receiver.received.length >= 30, 30_000);
    // Long enough for a second delivery by a slower instance to show up.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal(receiver.received.length, 30);
    const events = new Set(receiver.received.map((r) => (r.body as { id: string }).id));
    assert.equal(events.size, 30, "every event once");
    assert.ok(receiver.received.every((r) => r.valid), "every signature checks");
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await receiver.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
