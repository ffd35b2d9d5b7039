/** Leases (src/kv/leases.ts): one holder at a time, renewal, expiry, give-back with a result. */
import assert from "node:assert/strict";
import { aggregatesReady, buildAggregates } from "../src/projects/aggregates.ts";
import { aggregatesMarkerKey, leaseKey, topKeysKey } from "../src/kv/keys.ts";
import { claimLease, getLease, releaseLease } from "../src/kv/leases.ts";
import { countDownload, getTopKeys } from "../src/stats/downloads.ts";
import { createStore } from "../src/kv/store.ts";
import { sleep } from "./helpers.ts";

Deno.test("leases", async (t) => {
  await using kv = await Deno.openKv(":memory:");
  const store = createStore(kv);

  await t.step("one holder at a time; the holder renews", async () => {
    assert.ok(await claimLease(store, "sha512_backfill", { holder: "a", ttlMs: 60_000 }));
    assert.equal(await claimLease(store, "sha512_backfill", { holder: "b", ttlMs: 60_000 }), false);
    const before = (await getLease(store, "sha512_backfill"))!.until;
    await sleep(2);
    assert.ok(await claimLease(store, "sha512_backfill", { holder: "a", ttlMs: 60_000 }));
    assert.ok((await getLease(store, "sha512_backfill"))!.until > before, "renewed");
    // Another name is another lease.
    assert.ok(await claimLease(store, ["retention_run", 7], { holder: "b", ttlMs: 60_000 }));
    assert.deepEqual(leaseKey(["retention_run", 7]), ["leases", "retention_run", 7]);
  });

  await t.step("only the holder gives it back, with its result in the same commit", async () => {
    const result: Deno.KvKey = ["test_result"];
    assert.equal(
      await releaseLease(store, "sha512_backfill", {
        holder: "b",
        also: (op) => op.set(result, "b"),
      }),
      false,
    );
    assert.equal((await kv.get(result)).versionstamp, null, "nothing written for a non-holder");
    assert.ok(
      await releaseLease(store, "sha512_backfill", {
        holder: "a",
        also: (op) => op.set(result, "a"),
      }),
    );
    assert.equal((await kv.get(result)).value, "a");
    assert.equal(await getLease(store, "sha512_backfill"), null);
    assert.ok(await claimLease(store, "sha512_backfill", { holder: "b", ttlMs: 60_000 }));
  });

  await t.step("a lease that ran out is anyone's", async () => {
    assert.ok(await claimLease(store, "top_keys_refresh", { holder: "dead", ttlMs: 1 }));
    await sleep(5);
    assert.ok(await claimLease(store, "top_keys_refresh", { holder: "next", ttlMs: 60_000 }));
    assert.equal((await getLease(store, "top_keys_refresh"))?.holder, "next");
  });
});

Deno.test("the aggregates build and the top-keys refresh run under their leases", async (t) => {
  await using kv = await Deno.openKv(":memory:");
  const store = createStore(kv);

  await t.step("a build another instance holds is left to it, then taken over", async () => {
    assert.ok(await claimLease(store, "aggregates_build", { holder: "other", ttlMs: 30 }));
    assert.equal(await buildAggregates(store), "building elsewhere");
    assert.equal(await aggregatesReady(store), false);
    await sleep(40);
    assert.equal(await buildAggregates(store), "built");
    assert.equal(await aggregatesReady(store), true);
    assert.equal(await getLease(store, "aggregates_build"), null, "given back");
    assert.equal(await buildAggregates(store), "ready");
    assert.equal((await kv.get(aggregatesMarkerKey())).versionstamp !== null, true);
  });

  await t.step("top keys: computed by the lease's holder only", async () => {
    await countDownload(store, { releaseId: 1, projectId: 1, keyId: 9 });
    assert.ok(await claimLease(store, "top_keys_refresh", { holder: "other", ttlMs: 60_000 }));
    assert.deepEqual(await getTopKeys(store, { limit: 5, maxAgeMs: 60_000 }), []);
    assert.equal((await kv.get(topKeysKey())).versionstamp, null, "no snapshot computed");
    await releaseLease(store, "top_keys_refresh", { holder: "other" });
    assert.deepEqual(await getTopKeys(store, { limit: 5, maxAgeMs: 60_000 }), [
      { keyId: 9, downloads: 1 },
    ]);
    assert.equal(await getLease(store, "top_keys_refresh"), null, "given back");
  });
});
