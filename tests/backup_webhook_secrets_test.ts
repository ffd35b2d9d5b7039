/**
 * Webhook endpoints' secrets are in a backup only when asked
 * (`deno task backup --include-webhook-secrets`, docs/operators.md); without
 * them each endpoint is restored with no secret, its deliveries wait, and a
 * new secret from its page lets them through.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createBackup } from "../src/backup/backup.ts";
import { restoreBackup } from "../src/backup/restore.ts";
import {
  createWebhookEndpoint,
  emitWebhookEvent,
  getWebhookEndpoint,
  listWebhookDeliveries,
  replaceWebhookSecret,
} from "../src/webhooks/outbox.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { makeDataTempDir, runTask } from "./server_process.ts";
import { startReceiver, startTestWorker } from "./webhook_receiver.ts";
import { createStore } from "../src/kv/store.ts";

function location(dataDir: string) {
  return { kvPath: join(dataDir, "kv.sqlite3"), artifactsDir: join(dataDir, "artifacts") };
}

Deno.test("webhook secrets are backed up only when asked", async (t) => {
  const root = await makeDataTempDir("test-backup-webhooks");
  const source = join(root, "source");
  const receiver = startReceiver();
  const fx = await openDataDir(source);
  const endpoint = await createWebhookEndpoint(fx.store, {
    url: receiver.url,
    events: ["release.published"],
    created_by: "admin",
  });
  const rotated = await replaceWebhookSecret(fx.store, endpoint.id, { keepPrevious: true });
  const secrets = [endpoint.secret!, rotated.secret!];
  fx.close();
  try {
    await t.step("without the flag no secret is in the backup", async () => {
      const backup = join(root, "plain");
      const manifest = await createBackup(location(source), backup);
      assert.equal(manifest.webhook_secrets, "left_out");
      const text = await Deno.readTextFile(join(backup, "kv.jsonl"));
      for (const secret of secrets) assert.ok(!text.includes(secret), "a secret in kv.jsonl");
      assert.doesNotMatch(text, /whsec_/);
      assert.match(text, new RegExp(endpoint.id), "the endpoint itself is kept");
    });

    await t.step("restored without secrets, deliveries wait for a new secret", async () => {
      const target = join(root, "restored-plain");
      const restored = await runTask(["restore", join(root, "plain")], { APP_DATA_DIR: target });
      assert.equal(restored.code, 0, restored.stderr);
      assert.match(
        restored.stdout,
        /1 webhook endpoints have no secret \(the backup left them out\)/,
      );
      const kv = await Deno.openKv(join(target, "kv.sqlite3"));
      const store = createStore(kv);
      const worker = startTestWorker(store);
      try {
        const back = (await getWebhookEndpoint(store, endpoint.id))!;
        assert.equal(back.secret, null);
        assert.deepEqual(back.previous_secrets, []);
        assert.equal(back.url, endpoint.url);
        await emitWebhookEvent(store, "release.published", { release: { id: 1 } });
        await worker.tick();
        assert.equal(receiver.received.length, 0, "nothing is sent unsigned");
        const [waiting] = await listWebhookDeliveries(store, endpoint.id);
        assert.equal(waiting.status, "pending");
        const fresh = await replaceWebhookSecret(store, endpoint.id, { keepPrevious: true });
        receiver.setSecret(fresh.secret!);
        assert.deepEqual(fresh.previous_secrets, [], "no secret to keep");
        // The retry is due 10 s after the first attempt; make it due now.
        await kv.set(["webhook_outbox", 0, waiting.id], {
          delivery_id: waiting.id,
          endpoint_id: endpoint.id,
        });
        await worker.tick();
        assert.equal(receiver.received.length, 1);
        assert.equal(receiver.received[0].valid, true);
      } finally {
        worker.stop();
        kv.close();
      }
    });

    await t.step("--include-webhook-secrets keeps them", async () => {
      const backup = join(root, "with-secrets");
      const res = await runTask(["backup", "--include-webhook-secrets", backup], {
        APP_DATA_DIR: source,
      });
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /the webhook secrets \(keep this backup secret\)/);
      const target = join(root, "restored-secrets");
      const restored = await restoreBackup(backup, location(target));
      assert.equal(restored.webhook_secrets, "included");
      assert.equal(restored.endpointsWithoutSecret, 0);
      const kv = await Deno.openKv(join(target, "kv.sqlite3"));
      const store = createStore(kv);
      try {
        const back = (await getWebhookEndpoint(store, endpoint.id))!;
        assert.equal(back.secret, rotated.secret);
        assert.deepEqual(back.previous_secrets, rotated.previous_secrets);
      } finally {
        kv.close();
      }
    });
  } finally {
    await receiver.close();
    await Deno.remove(root, { recursive: true });
  }
});
