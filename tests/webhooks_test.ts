/**
 * Webhooks (docs/webhooks.md): the HMAC signature, the SSRF guard, and
 * delivery from the KV outbox to a real receiver on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { startReceiver, startTestWorker, subscribeReceiver } from "./webhook_receiver.ts";
import { checkTarget, nonPublicReason, RefusedTargetError } from "../src/webhooks/address_guard.ts";
import { signDelivery, verifyDelivery } from "../src/webhooks/signature.ts";
import { nextAttemptAt, RETRY_DELAYS_SECONDS } from "../src/webhooks/worker.ts";
import {
  createApiKey,
  createProject,
  createRelease,
  deleteReleaseRecord,
  emitWebhookEvent,
  listWebhookDeliveries,
  publishDraft,
  resendWebhookDelivery,
  setApiKeyActive,
  setReleaseState,
  type WebhookEventBody,
} from "../src/store/mod.ts";
import { waitFor } from "./helpers.ts";

Deno.test("webhook signatures", async (t) => {
  const parts = { deliveryId: "d1", timestamp: 1_700_000_000, body: '{"a":1}' };
  await t.step("is the HMAC-SHA256 of id.timestamp.body, hex, prefixed sha256=", () => {
    const mac = createHmac("sha256", "s3cret").update('d1.1700000000.{"a":1}').digest("hex");
    assert.equal(signDelivery("s3cret", parts), `sha256=${mac}`);
  });
  await t.step("verifies only with the same secret and the same parts", () => {
    const header = signDelivery("s3cret", parts);
    assert.equal(verifyDelivery("s3cret", parts, header), true);
    assert.equal(verifyDelivery("other", parts, header), false);
    assert.equal(verifyDelivery("s3cret", { ...parts, body: '{"a":2}' }, header), false);
    assert.equal(verifyDelivery("s3cret", { ...parts, timestamp: 1 }, header), false);
  });
});

Deno.test("webhook SSRF guard", async (t) => {
  await t.step("names every non-public address class", () => {
    for (
      const address of [
        "127.0.0.1",
        "127.8.9.10",
        "0.0.0.0",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "224.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "ff02::1",
      ]
    ) {
      assert.notEqual(nonPublicReason(address), null, address);
    }
    for (const address of ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111"]) {
      assert.equal(nonPublicReason(address), null, address);
    }
  });
  await t.step("refuses loopback, private and link-local targets without the setting", async () => {
    for (
      const url of [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/hook",
        "http://[::ffff:192.168.0.1]/hook",
        "ftp://example.com/hook",
      ]
    ) {
      await assert.rejects(checkTarget(url, { allowPrivate: false }), RefusedTargetError, url);
    }
  });
  await t.step("checks every address a host name resolves to", async () => {
    const resolve = (host: string) =>
      Promise.resolve(host === "mixed.example" ? ["93.184.216.34", "10.0.0.1"] : ["93.184.216.34"]);
    await assert.rejects(
      checkTarget("https://mixed.example/hook", { allowPrivate: false, resolve }),
      /resolves to 10\.0\.0\.1, a private address/,
    );
    const ok = await checkTarget("https://public.example/hook", { allowPrivate: false, resolve });
    assert.equal(ok.hostname, "public.example");
  });
  await t.step("a name that does not resolve is refused", async () => {
    await assert.rejects(
      checkTarget("https://nowhere.example/", {
        allowPrivate: false,
        resolve: () => Promise.resolve([]),
      }),
      RefusedTargetError,
    );
  });
  await t.step("allows private targets when the operator says so", async () => {
    const url = await checkTarget("http://127.0.0.1:9/hook", { allowPrivate: true });
    assert.equal(url.port, "9");
  });
});

Deno.test("webhook retry schedule lasts at least 24 hours", () => {
  const total = RETRY_DELAYS_SECONDS.reduce((a, b) => a + b, 0);
  assert.ok(total >= 24 * 3600, `${total} s`);
  assert.equal(nextAttemptAt(1, 0), 10_000);
  assert.equal(nextAttemptAt(RETRY_DELAYS_SECONDS.length + 1, 0), null);
});

Deno.test("webhook delivery to a real receiver", async (t) => {
  const kv = await Deno.openKv(":memory:");
  let status = 204;
  const receiver = startReceiver(() => status);
  const worker = startTestWorker(kv);
  try {
    const endpoint = await subscribeReceiver(kv, receiver, {
      events: ["release.published", "key.created"],
    });
    assert.match(endpoint.secret, /^whsec_[A-Za-z0-9_-]{43}$/);

    await t.step("a subscribed event arrives once, signed with the endpoint's secret", async () => {
      await emitWebhookEvent(kv, "release.published", { release: { id: 7 } });
      await emitWebhookEvent(kv, "release.deleted", { release: { id: 8 } });
      await worker.tick();
      await worker.tick();
      assert.equal(receiver.received.length, 1);
      const [got] = receiver.received;
      assert.equal(got.valid, true);
      assert.equal(got.event, "release.published");
      assert.deepEqual((got.body as { data: unknown }).data, { release: { id: 7 } });
      const [logged] = await listWebhookDeliveries(kv, endpoint.id);
      assert.equal(logged.status, "delivered");
      assert.equal(logged.id, got.id);
      assert.equal(logged.last_status, 204);
    });

    await t.step("a failed attempt is logged and due again later", async () => {
      status = 500;
      await emitWebhookEvent(kv, "key.created", { key: { id: 1 } });
      await worker.tick();
      const [logged] = await listWebhookDeliveries(kv, endpoint.id);
      assert.equal(logged.status, "pending");
      assert.equal(logged.attempts, 1);
      assert.equal(logged.last_status, 500);
      assert.ok(Date.parse(logged.next_attempt_at!) > Date.now() + 5000);
      const before = receiver.received.length;
      await worker.tick();
      assert.equal(receiver.received.length, before, "not sent again before it is due");
    });

    await t.step("send again: a new delivery of the same event", async () => {
      status = 200;
      const [first] = (await listWebhookDeliveries(kv, endpoint.id)).slice(-1);
      const again = await resendWebhookDelivery(kv, {
        endpointId: endpoint.id,
        deliveryId: first.id,
      });
      await worker.tick();
      const last = receiver.received.at(-1)!;
      assert.equal(last.id, again.id);
      assert.notEqual(again.id, first.id);
      assert.equal((last.body as { id: string }).id, first.event_id);
      assert.equal(last.valid, true);
    });
  } finally {
    worker.stop();
    await receiver.close();
    kv.close();
  }
});

Deno.test("webhook deliveries to private targets are refused without the setting", async () => {
  const kv = await Deno.openKv(":memory:");
  const receiver = startReceiver();
  const worker = startTestWorker(kv, { allowPrivate: false });
  try {
    const endpoint = await subscribeReceiver(kv, receiver, { events: ["release.archived"] });
    await emitWebhookEvent(kv, "release.archived", { release: { id: 1 } });
    await worker.tick();
    await waitFor(
      "the first attempt",
      async () => (await listWebhookDeliveries(kv, endpoint.id))[0]?.attempts === 1,
      10_000,
    );
    const [logged] = await listWebhookDeliveries(kv, endpoint.id);
    assert.equal(logged.status, "failed");
    assert.match(logged.last_error!, /refused target: 127\.0\.0\.1 .*loopback/);
    assert.equal(receiver.received.length, 0);
  } finally {
    worker.stop();
    await receiver.close();
    kv.close();
  }
});

Deno.test("release and key writes carry their webhook events in the same commit", async (t) => {
  const kv = await Deno.openKv(":memory:");
  const events = async () => {
    const found: WebhookEventBody[] = [];
    for await (const e of kv.list<WebhookEventBody>({ prefix: ["webhook_events"] })) {
      found.push(e.value);
      await kv.delete(e.key);
    }
    return found.map((e) => `${e.type} ${JSON.stringify(e.data)}`);
  };
  try {
    const project = await createProject(kv, { name: "App", slug: "app" });
    const fields = {
      project_id: project.id,
      filename: "app.zip",
      storage_key: "k",
      checksum_sha256: "a".repeat(64),
      size_bytes: 1,
    };
    await t.step("an active upload is published; a draft is not until published", async () => {
      const active = await createRelease(kv, { ...fields, version: "1.0.0" });
      const draft = await createRelease(kv, { ...fields, version: "1.1.0", draft: true });
      assert.deepEqual(await events(), [
        `release.published {"release":{"id":${active.id},"project_id":${project.id},"version":"1.0.0","state":"active"}}`,
      ]);
      await publishDraft(kv, draft.id, { makeLatest: true });
      assert.deepEqual(await events(), [
        `release.published {"release":{"id":${draft.id},"project_id":${project.id},"version":"1.1.0","state":"active"}}`,
      ]);
      await setReleaseState(kv, active.id, "archived");
      assert.deepEqual(await events(), [
        `release.archived {"release":{"id":${active.id},"project_id":${project.id},"version":"1.0.0","state":"archived"}}`,
      ]);
      await setReleaseState(kv, active.id, "archived");
      assert.deepEqual(await events(), [], "no event without a change");
      await deleteReleaseRecord(kv, active.id);
      assert.deepEqual((await events()).map((e) => e.split(" ")[0]), ["release.deleted"]);
    });
    await t.step("a key created, then disabled", async () => {
      const { apiKey } = await createApiKey(kv, {
        name: "ci",
        can_download: true,
        scope_mode: "all_projects",
      });
      await setApiKeyActive(kv, apiKey.id, false);
      await setApiKeyActive(kv, apiKey.id, false);
      assert.deepEqual((await events()).sort(), [
        `key.created {"key":{"id":${apiKey.id},"name":"ci","expires_at":null}}`,
        `key.disabled {"key":{"id":${apiKey.id},"name":"ci","expires_at":null}}`,
      ]);
    });
    await t.step("a key expiring within 7 days is announced once", async () => {
      const soon = new Date(Date.now() + 3 * 86_400_000).toISOString();
      const later = new Date(Date.now() + 30 * 86_400_000).toISOString();
      const { apiKey } = await createApiKey(kv, {
        name: "soon",
        can_download: true,
        scope_mode: "all_projects",
        expires_at: soon,
      });
      await createApiKey(kv, {
        name: "later",
        can_download: true,
        scope_mode: "all_projects",
        expires_at: later,
      });
      await events();
      const worker = startTestWorker(kv, { allowPrivate: false, timeoutMs: 1000 });
      await worker.tick();
      worker.stop();
      const again = startTestWorker(kv, { allowPrivate: false, timeoutMs: 1000 });
      await again.tick();
      again.stop();
      // The worker fans events out at once; none is subscribed, so look at the notices instead.
      const notices: Deno.KvKey[] = [];
      for await (const e of kv.list({ prefix: ["webhook_expiry_notices"] })) notices.push(e.key);
      assert.deepEqual(notices, [["webhook_expiry_notices", apiKey.id, apiKey.expires_at!]]);
    });
  } finally {
    kv.close();
  }
});
