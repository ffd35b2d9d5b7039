/**
 * The webhook events added after the first ones (docs/webhooks.md "Events"):
 * `download.completed` in batches from the download totals, and
 * `rollout.changed` from every rollout write, delivered to a real receiver.
 */
import assert from "node:assert/strict";
import {
  changeRollout,
  completeRollout,
  endRollout,
  startRollout,
} from "../src/releases/rollouts.ts";
import { deleteWebhookEndpoint } from "../src/webhooks/outbox.ts";
import { createTestApp, downloadCount, seedKey, seedProject, seedRelease } from "./helpers.ts";
import { startReceiver, startTestWorker, subscribeReceiver } from "./webhook_receiver.ts";

interface Received {
  type: string;
  data: Record<string, unknown> & { release?: { id: number } };
}

Deno.test("download.completed is announced in batches, once per batch", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "app" });
  const release = await seedRelease(app, project.id, "1.0.0");
  const other = await seedRelease(app, project.id, "1.1.0");
  const { secret } = await seedKey(app);
  const receiver = startReceiver();
  const worker = (batchMs = 0) => startTestWorker(app.store, { downloadBatchMs: batchMs });
  const download = async (id: number, times: number) => {
    const before = await downloadCount(app.store, id);
    for (let i = 0; i < times; i++) {
      const res = await app.request(`/api/v1/releases/${id}/download`, secret);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    for (let wait = 0; (await downloadCount(app.store, id)) < before + times; wait++) {
      assert.ok(wait < 100, "downloads not counted");
    }
  };
  const events = () =>
    receiver.received.map((r) => r.body as Received).filter((b) => b.type === "download.completed");
  const one = worker();
  try {
    await download(release.id, 2);
    const endpoint = await subscribeReceiver(app.store, receiver, {
      events: ["download.completed"],
    });

    await t.step("downloads before the subscription are not announced", async () => {
      await one.tick();
      await one.tick();
      assert.deepEqual(events(), []);
    });

    await t.step("downloads since then come as one event per release", async () => {
      await download(release.id, 3);
      await download(other.id, 1);
      await one.tick();
      await one.tick();
      const got = events().sort((a, b) => a.data.release!.id - b.data.release!.id);
      assert.deepEqual(got.map((e) => e.data), [
        {
          release: { id: release.id, project_id: project.id, version: "1.0.0", state: "active" },
          downloads: 3,
          total_downloads: 5,
        },
        {
          release: { id: other.id, project_id: project.id, version: "1.1.0", state: "active" },
          downloads: 1,
          total_downloads: 1,
        },
      ]);
      assert.ok(receiver.received.every((r) => r.valid), "HMAC checked by the receiver");
      await one.tick();
      assert.equal(events().length, 2, "nothing new: nothing announced");
    });

    await t.step("two instances on one KV announce a batch once", async () => {
      await download(release.id, 4);
      const two = worker();
      const three = worker();
      try {
        await Promise.all([one.tick(), two.tick(), three.tick()]);
        await Promise.all([one.tick(), two.tick(), three.tick()]);
      } finally {
        two.stop();
        three.stop();
      }
      const batches = events().slice(2);
      assert.deepEqual(batches.map((e) => [e.data.downloads, e.data.total_downloads]), [[4, 9]]);
    });

    await t.step("a batch waits for its interval", async () => {
      const slow = worker(3_600_000);
      try {
        await slow.tick(); // the first round announces
        await download(release.id, 1);
        await slow.tick();
        await slow.tick();
      } finally {
        slow.stop();
      }
      assert.deepEqual(events().slice(3).map((e) => e.data.downloads), []);
      await one.tick();
      await one.tick();
      assert.deepEqual(events().slice(3).map((e) => e.data.downloads), [1]);
    });

    await t.step(
      "without a subscriber nothing is announced, and history stays untold",
      async () => {
        await deleteWebhookEndpoint(app.store, endpoint.id);
        await download(release.id, 2);
        await one.tick();
        await subscribeReceiver(app.store, receiver, { events: ["download.completed"] });
        await one.tick();
        await one.tick();
        assert.equal(events().length, 4);
        await download(release.id, 1);
        await one.tick();
        await one.tick();
        assert.deepEqual(events().slice(4).map((e) => e.data.downloads), [1]);
      },
    );
  } finally {
    one.stop();
    await receiver.close();
  }
});

Deno.test("every rollout change is a rollout.changed event", async () => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  await seedRelease(app, project.id, "1.0.0");
  const v2 = await seedRelease(app, project.id, "2.0.0");
  const v1b = await seedRelease(app, project.id, "1.0.1");
  const receiver = startReceiver();
  const worker = startTestWorker(app.store);
  try {
    await subscribeReceiver(app.store, receiver, { events: ["rollout.changed"] });
    // One change at a time: deliveries of a batch may arrive in any order.
    const act = async (change: () => Promise<unknown>) => {
      await change();
      await worker.tick();
      await worker.tick();
    };
    await act(() => startRollout(app.store, v2.id, { percentage: 10 }));
    await act(() => changeRollout(app.store, project.id, { halted: true }));
    await act(() => changeRollout(app.store, project.id, { halted: false }));
    await act(() => changeRollout(app.store, project.id, { percentage: 50 }));
    await act(() => changeRollout(app.store, project.id, { percentage: 20 }));
    await act(() => changeRollout(app.store, project.id, { tester_tag: "beta" }));
    await act(() => completeRollout(app.store, project.id));
    // 1.0.1 is active and no longer the latest (2.0.0 is): it may be staged, then ended.
    await act(() => startRollout(app.store, v1b.id, { percentage: 5 }));
    await act(() => endRollout(app.store, project.id));
    await act(() => endRollout(app.store, project.id)); // no rollout: no event
    const got = receiver.received.map((r) => r.body as Received);
    assert.ok(receiver.received.every((r) => r.valid && r.event === "rollout.changed"));
    const actions = got.map((e) => e.data.action);
    assert.deepEqual(actions, [
      "started",
      "halted",
      "resumed",
      "widened",
      "narrowed",
      "changed",
      "completed",
      "started",
      "ended",
    ]);
    assert.deepEqual(got[3].data.rollout, {
      project_id: project.id,
      release_id: v2.id,
      previous_id: v1b.id,
      percentage: 50,
      halted: false,
      tester_tag: null,
    });
    assert.equal((got[6].data.rollout as { tester_tag: string }).tester_tag, "beta");
  } finally {
    worker.stop();
    await receiver.close();
  }
});
