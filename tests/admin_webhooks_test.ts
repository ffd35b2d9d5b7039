/**
 * The webhooks admin pages (docs/webhooks.md): an admin registers an endpoint
 * (the secret shown once), reads its delivery log and sends a delivery again;
 * a form error re-shows the form; other roles are refused.
 */
import assert from "node:assert/strict";
import { AdminClient, createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { startReceiver, startTestWorker, verifiesWith } from "./webhook_receiver.ts";
import { lastAudit } from "./helpers.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { emitWebhookEvent, type WebhookEndpoint } from "../src/webhooks/outbox.ts";

Deno.test("webhooks in the admin UI", async (t) => {
  await using app = await createAdminTestApp();
  const admin = await signedInClient(app);
  const receiver = startReceiver();
  const worker = startTestWorker(app.store);
  try {
    let endpointId = "";
    await t.step("a bad URL or no event re-shows the form with the message", async () => {
      await admin.page("/admin/webhooks");
      const res = await admin.post("/admin/webhooks", { url: "not a url", events: "key.created" });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /enter a full URL/);
      const none = await admin.post("/admin/webhooks", { url: receiver.url });
      assert.equal(none.status, 400);
      assert.match(await none.text(), /choose at least one event/);
    });

    await t.step("adding an endpoint shows its secret once", async () => {
      await admin.page("/admin/webhooks");
      const res = await admin.post("/admin/webhooks", {
        url: receiver.url,
        events: ["key.created", "release.published"],
      });
      assert.equal(res.status, 200);
      const html = await res.text();
      const secret = /id="webhook-secret">(whsec_[A-Za-z0-9+/=]+)</.exec(html)?.[1];
      assert.ok(secret, "the secret is on the page");
      receiver.setSecret(secret);
      endpointId = /href="\/admin\/webhooks\/([0-9a-z]+)"/.exec(html)![1];
      const list = (await admin.page("/admin/webhooks")).html;
      assert.match(list, new RegExp(`data-webhook-id="${endpointId}"`));
      // Compared as text: a secret is base64, whose `+` would be a quantifier in a pattern.
      assert.ok(!list.includes(secret), "not shown again");
      assert.ok(!(await admin.page(`/admin/webhooks/${endpointId}`)).html.includes(secret));
    });

    await t.step("an API key created in the UI is delivered and logged", async () => {
      await admin.page("/admin/api-keys");
      const created = await admin.post("/admin/api-keys", {
        name: "ci",
        scope_mode: "all_projects",
        can_download: "on",
      });
      assert.ok(created.status < 400, `status ${created.status}`);
      await worker.tick();
      assert.equal(receiver.received.length, 1);
      assert.equal(receiver.received[0].event, "key.created");
      assert.equal(receiver.received[0].valid, true);
      const { html } = await admin.page(`/admin/webhooks/${endpointId}`);
      assert.match(html, new RegExp(`data-delivery-id="${receiver.received[0].id}"`));
      assert.match(html, /delivered/);
    });

    await t.step("send again delivers the same event under a new delivery id", async () => {
      const first = receiver.received[0];
      const res = await admin.post(
        `/admin/webhooks/${endpointId}/deliveries/${first.id}/resend`,
      );
      assert.equal(res.status, 303);
      await worker.tick();
      assert.equal(receiver.received.length, 2);
      const again = receiver.received[1];
      assert.notEqual(again.id, first.id);
      assert.deepEqual(again.body, first.body);
      assert.equal(again.valid, true);
    });

    await t.step("a new secret: shown once, the old one signs alongside for 24 hours", async () => {
      const oldSecret = /id="webhook-secret">([^<]+)</.exec(
        (await admin.page(`/admin/webhooks/${endpointId}`)).html,
      )?.[1];
      assert.equal(oldSecret, undefined, "the endpoint page shows no secret");
      const before = receiver.received.at(-1)!;
      const res = await admin.post(`/admin/webhooks/${endpointId}/secret`, { previous: "keep" });
      assert.equal(res.status, 200);
      const html = await res.text();
      const secret = /id="webhook-secret">(whsec_[A-Za-z0-9+/=]+)</.exec(html)?.[1];
      assert.ok(secret, "the new secret is on the page");
      assert.match(html, /id="webhook-previous-secret">Until/);
      assert.equal((await lastAudit(app)).action, "webhook.secret");
      await emitWebhookEvent(app.store, "key.created", { key: { id: 99 } });
      await worker.tick();
      const during = receiver.received.at(-1)!;
      assert.notEqual(during.id, before.id);
      assert.equal(during.valid, true, "the receiver's old secret still verifies");
      assert.equal(verifiesWith(secret, during), true, "and so does the new one");
      receiver.setSecret(secret);
      const ended = await admin.post(`/admin/webhooks/${endpointId}/secret`, { previous: "end" });
      const newest = /id="webhook-secret">(whsec_[A-Za-z0-9+/=]+)</.exec(await ended.text())![1];
      await emitWebhookEvent(app.store, "key.created", { key: { id: 100 } });
      await worker.tick();
      const after = receiver.received.at(-1)!;
      assert.equal(after.valid, false, "the replaced secret signs no more");
      assert.equal(verifiesWith(newest, after), true);
      receiver.setSecret(newest);
    });

    await t.step(
      "a secret that cannot sign is named on the page until a new one is made",
      async () => {
        const key = ["webhook_endpoints", endpointId];
        const current = (await app.kv.get<WebhookEndpoint>(key)).value!;
        // The form of secrets made before the Standard Webhooks form: base64url, used as is.
        await app.kv.set(key, { ...current, secret: "whsec_" + "x-_".repeat(14) + "x" });
        const { html } = await admin.page(`/admin/webhooks/${endpointId}`);
        assert.match(html, /id="webhook-no-secret"[^>]*>[^<]*not a Standard Webhooks secret/);
        const res = await admin.post(`/admin/webhooks/${endpointId}/secret`, { previous: "keep" });
        const shown = await res.text();
        const secret = /id="webhook-secret">(whsec_[A-Za-z0-9+/=]+)</.exec(shown)![1];
        assert.match(shown, /The replaced secret signs no more/, "one that cannot sign is dropped");
        receiver.setSecret(secret);
        const after = (await admin.page(`/admin/webhooks/${endpointId}`)).html;
        assert.doesNotMatch(after, /webhook-no-secret/);
        assert.doesNotMatch(after, /A replaced secret also signs/);
      },
    );

    await t.step("the audit log keeps only the scheme and host of an endpoint's URL", async () => {
      await admin.page("/admin/webhooks");
      const url = "https://hooks.example.com/services/T0001/B0002/Xy9SecretPart?token=abc";
      const res = await admin.post("/admin/webhooks", { url, events: "key.created" });
      assert.equal(res.status, 200);
      const id = /href="\/admin\/webhooks\/([0-9a-z]+)"/.exec(await res.text())![1];
      assert.equal((await admin.post(`/admin/webhooks/${id}/secret`)).status, 200);
      assert.equal((await admin.post(`/admin/webhooks/${id}/delete`)).status, 303);
      const { entries } = await listAuditEntries(app.store, { limit: 3 });
      assert.deepEqual(entries.map((e) => e.action), [
        "webhook.delete",
        "webhook.secret",
        "webhook.create",
      ]);
      for (const entry of entries) {
        assert.match(entry.details, /url https:\/\/hooks\.example\.com(;|$)/);
        assert.doesNotMatch(JSON.stringify(entry), /services|T0001|Xy9SecretPart|token/);
      }
    });

    await t.step("an unknown endpoint or delivery is a 404 page", async () => {
      assert.equal((await admin.fetch("/admin/webhooks/000000000zzzzzzzz")).status, 404);
      const res = await admin.post(`/admin/webhooks/${endpointId}/deliveries/nope/resend`);
      assert.equal(res.status, 404);
    });

    await t.step("viewers and publishers are refused", async () => {
      for (const role of ["viewer", "publisher"] as const) {
        const password = "a long enough password 42";
        await admin.page("/admin/accounts");
        const made = await admin.post("/admin/accounts", { username: `${role}1`, password, role });
        assert.equal(made.status, 303);
        const other = new AdminClient(app);
        assert.equal((await other.signIn(`${role}1`, password)).status, 303);
        assert.equal((await other.fetch("/admin/webhooks")).status, 403);
        assert.equal((await other.fetch(`/admin/webhooks/${endpointId}`)).status, 403);
        assert.equal(
          (await other.post("/admin/webhooks", { url: receiver.url, events: "key.created" }))
            .status,
          403,
        );
      }
    });

    await t.step("deleting the endpoint", async () => {
      const res = await admin.post(`/admin/webhooks/${endpointId}/delete`);
      assert.equal(res.status, 303);
      assert.equal((await admin.fetch(`/admin/webhooks/${endpointId}`)).status, 404);
    });
  } finally {
    worker.stop();
    await receiver.close();
  }
});
