/**
 * The dashboard's "Needs attention" list (docs/admin-ui.md "Dashboard") and the webhook pages an
 * admin can trust (docs/webhooks.md): each case one line linking to where it is dealt with,
 * nothing when nothing needs anyone, lines a role cannot open left out; a test ping, each
 * delivery's body and answer, the URL and events editable (audited), a failing endpoint marked.
 */
import assert from "node:assert/strict";
import { lastAudit, seedProject, seedRelease } from "./helpers.ts";
import { AdminClient, createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import { HALT_REASON, seedAttention, startFailingReceiver } from "./attention_fixtures.ts";
import { startReceiver, startTestWorker } from "./webhook_receiver.ts";
import { createAdminAccount } from "../src/accounts/admin_users.ts";
import { hashPassword } from "../src/lib/passwords.ts";
import { emitWebhookEvent, getWebhookEndpoint } from "../src/webhooks/outbox.ts";
import { endRollout } from "../src/releases/rollouts.ts";
import { getProjectBySlug } from "../src/projects/projects.ts";

const PASSWORD = "a long enough password";

/** The attention lines of a dashboard: kind, link and text. */
function attentionLines(html: string): Array<{ kind: string; href: string; text: string }> {
  const list = /<section[^>]*id="attention"[\s\S]*?<\/section>/.exec(html)?.[0] ?? "";
  return [...list.matchAll(/<li[^>]*data-attention="([^"]+)"[^>]*>([\s\S]*?)<\/li>/g)].map(
    ([, kind, inner]) => ({
      kind,
      href: /href="([^"]+)"/.exec(inner)?.[1] ?? "",
      text: inner.replace(/<[^>]+>/g, " ").replace(/&quot;/g, '"').replace(/\s+/g, " ").trim(),
    }),
  );
}

Deno.test("the dashboard lists what needs attention, and nothing when nothing does", async (t) => {
  await using app = await createAdminTestApp({ webhooksAllowPrivate: true });
  const admin = await signedInClient(app);
  const receiver = startFailingReceiver();
  try {
    await t.step("nothing needs anyone: the list says so", async () => {
      const project = await seedProject(app, { slug: "quiet", name: "Quiet" });
      await seedRelease(app, project.id, "1.0.0");
      const { html } = await admin.page("/admin");
      assert.match(html, /data-attention-count="0"/);
      assert.match(html, /Nothing needs you right now/);
      assert.deepEqual(attentionLines(html), []);
    });

    const seeded = await seedAttention(app, { webhookUrl: receiver.url });
    const endpointPage = `/admin/webhooks/${seeded.endpoint.id}`;

    await t.step("a failing endpoint shows once an attempt failed", async () => {
      assert.ok(
        !attentionLines((await admin.page("/admin")).html).some((l) => l.kind === "webhook"),
      );
      await admin.page(endpointPage);
      const res = await admin.post(`${endpointPage}/test`, {});
      assert.equal(res.status, 303);
    });

    await t.step("each case is one line linking to where to act", async () => {
      const lines = attentionLines((await admin.page("/admin")).html);
      const byKind = new Map(lines.map((line) => [line.kind, line]));
      assert.deepEqual(
        lines.map((line) => line.kind),
        ["halted", "rolled-back", "webhook", "signing", "gated", "key", "token"],
      );
      assert.equal(byKind.get("halted")!.href, "/admin/projects/acme-desktop/rollout#rollout");
      assert.ok(byKind.get("halted")!.text.includes("Acme Desktop 2.4.0-beta.3 at 25%"));
      assert.ok(byKind.get("halted")!.text.includes(HALT_REASON), byKind.get("halted")!.text);
      assert.equal(
        byKind.get("rolled-back")!.href,
        "/admin/projects/field-notes/rollout#release-safety",
      );
      assert.match(byKind.get("rolled-back")!.text, /Field Notes 3\.1\.0 .*offered 3\.0\.2/);
      assert.equal(byKind.get("webhook")!.href, endpointPage);
      assert.match(byKind.get("webhook")!.text, /the receiver answered 500 .*webhook\.test/);
      assert.equal(byKind.get("signing")!.href, "/admin/signing-keys#tuf");
      assert.match(byKind.get("signing")!.text, /acme-cli.*no online key/);
      assert.equal(byKind.get("gated")!.href, "/admin/projects/acme-mobile-sync/rollout#rollout");
      assert.match(byKind.get("gated")!.text, /5\.1\.0 at 5%.*waits for 100 successful installs/);
      assert.equal(byKind.get("key")!.href, `/admin/api-keys/${seeded.keyId}`);
      assert.match(byKind.get("key")!.text, /Production updater \(EU\).*in 5 days/);
      assert.match(byKind.get("token")!.text, /GitHub Actions release workflow.*in 3 days/);
      // A key that expires in 40 days is not listed.
      assert.ok(!lines.some((line) => line.text.includes("Staging updater")));
    });

    await t.step("a line goes when its case is dealt with", async () => {
      const before = attentionLines((await admin.page("/admin")).html).length;
      const sync = await getProjectBySlug(app.store, "acme-mobile-sync");
      await endRollout(app.store, sync!.id);
      const after = attentionLines((await admin.page("/admin")).html);
      assert.equal(after.length, before - 1);
      assert.ok(!after.some((line) => line.kind === "gated"));
    });

    await t.step("each role sees only the lines whose page it may open", async () => {
      const hash = await hashPassword(PASSWORD);
      await createAdminAccount(app.store, {
        username: "pat",
        passwordHash: hash,
        role: "publisher",
      });
      await createAdminAccount(app.store, { username: "vic", passwordHash: hash, role: "viewer" });
      const kindsOf = async (username: string) => {
        const client = new AdminClient(app);
        assert.equal((await client.signIn(username, PASSWORD)).status, 303);
        return attentionLines((await client.page("/admin")).html).map((line) => line.kind);
      };
      assert.deepEqual(await kindsOf("pat"), ["halted", "rolled-back"]);
      assert.deepEqual(await kindsOf("vic"), ["halted", "rolled-back", "key", "token"]);
    });
  } finally {
    await receiver.close();
  }
});

Deno.test("webhooks: test ping, deliveries with their answer, editing, failing marked", async (t) => {
  await using app = await createAdminTestApp({ webhooksAllowPrivate: true });
  const admin = await signedInClient(app);
  let status = 500;
  const receiver = startReceiver(() => status);
  const worker = startTestWorker(app.store);
  try {
    await admin.page("/admin/webhooks");
    const created = await admin.post("/admin/webhooks", {
      url: receiver.url,
      events: ["key.created"],
    });
    const html = await created.text();
    const secret = /id="webhook-secret">(whsec_[A-Za-z0-9+/=]+)</.exec(html)![1];
    receiver.setSecret(secret);
    const id = /href="\/admin\/webhooks\/([0-9a-z]+)"/.exec(html)![1];
    const page = `/admin/webhooks/${id}`;

    await t.step("a new endpoint is neither failing nor working", async () => {
      const list = (await admin.page("/admin/webhooks")).html;
      assert.match(list, /data-endpoint-state="untried"/);
      assert.match((await admin.page(page)).html, /Send a test ping/);
    });

    let deliveryPage = "";
    await t.step("a test ping is a signed webhook.test, its answer shown", async () => {
      const res = await admin.post(`${page}/test`, {});
      assert.equal(res.status, 303);
      deliveryPage = res.headers.get("location")!;
      assert.match(deliveryPage, new RegExp(`^${page}/deliveries/[0-9a-z]+$`));
      assert.equal(receiver.received.length, 1);
      const ping = receiver.received[0];
      assert.equal(ping.event, "webhook.test");
      assert.equal(ping.valid, true, "signed with the endpoint's secret");
      const body = ping.body as { type: string; data: { endpoint: { id: string } } };
      assert.equal(body.type, "webhook.test");
      assert.equal(body.data.endpoint.id, id);
      const shown = (await admin.page(deliveryPage)).html;
      assert.match(shown, /The test ping failed: the receiver answered 500/);
      assert.match(shown, /data-delivery-state="failed"/);
      assert.match(shown, /HTTP 500/);
      // The body as sent, indented: the text of the block parses to the body.
      const block = /data-delivery-body[^>]*><code>([\s\S]*?)<\/code>/.exec(shown)![1];
      const text = block.replace(/<[^>]+>/g, "").replaceAll("&quot;", '"');
      assert.deepEqual(JSON.parse(text), ping.body);
      assert.match(text, /^\{\n {2}"id"/);
      const entry = await lastAudit(app);
      assert.equal(entry.action, "webhook.test");
      assert.match(entry.details, /the receiver answered 500/);
    });

    await t.step(
      "the failing endpoint is marked in the list, its page and the dashboard",
      async () => {
        assert.match((await admin.page("/admin/webhooks")).html, /data-endpoint-state="failing"/);
        assert.match((await admin.page(page)).html, /data-webhook-health="failing"/);
        const lines = attentionLines((await admin.page("/admin")).html);
        assert.deepEqual(lines.map((line) => line.kind), ["webhook"]);
      },
    );

    await t.step("a delivery the worker retries shows as retrying with its answer", async () => {
      await emitWebhookEvent(app.store, "key.created", { key: { id: 1, name: "k" } });
      await worker.tick();
      const list = (await admin.page(page)).html;
      assert.match(list, /data-delivery-state="retrying"/);
      assert.doesNotMatch(list, /badge-pending/);
    });

    await t.step("an answered attempt makes it working again", async () => {
      status = 200;
      await admin.page(page);
      await admin.post(`${page}/test`, {});
      assert.match((await admin.page("/admin/webhooks")).html, /data-endpoint-state="working"/);
      assert.deepEqual(attentionLines((await admin.page("/admin")).html), []);
    });

    await t.step("URL and events are edited; a bad URL re-shows the form", async () => {
      await admin.page(page);
      const bad = await admin.post(page, { url: "ftp://x", events: "key.created" });
      assert.equal(bad.status, 400);
      const badHtml = await bad.text();
      assert.match(badHtml, /must start with https:\/\/ or http:\/\//);
      assert.match(badHtml, /<details[^>]*id="webhook-edit"[^>]*open/);
      const newUrl = `${receiver.url}?team=release`;
      const res = await admin.post(page, {
        url: newUrl,
        events: ["key.created", "rollout.changed"],
      });
      assert.equal(res.status, 303);
      const endpoint = await getWebhookEndpoint(app.store, id);
      assert.equal(endpoint!.url, newUrl);
      assert.deepEqual(endpoint!.events, ["key.created", "rollout.changed"]);
      assert.equal(endpoint!.secret, secret, "the secret stays");
      const entry = await lastAudit(app);
      assert.equal(entry.action, "webhook.update");
      assert.match(entry.details, /events key\.created -> key\.created,rollout\.changed/);
      assert.doesNotMatch(entry.details, /team=release/, "the URL's path and query stay out");
    });

    await t.step("a delivery of another endpoint or an unknown id is 404", async () => {
      assert.equal((await admin.fetch(`${page}/deliveries/000000000bbbbbbbbbbbb`)).status, 404);
      assert.equal((await admin.fetch(`${page}/deliveries/x`)).status, 404);
    });
  } finally {
    worker.stop();
    await receiver.close();
  }
});
