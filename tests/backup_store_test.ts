import assert from "node:assert/strict";
import {
  exportEntries,
  importEntries,
  isKvEmpty,
  type KvRecord,
  snapshotEntries,
  SnapshotUnstableError,
} from "../src/kv/entries.ts";
import { withKv } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

/** Enough entries that one list takes several pages (and several awaits). */
async function fill(kv: Deno.Kv, count: number) {
  for (let i = 0; i < count; i += 500) {
    const op = kv.atomic();
    for (let j = i; j < Math.min(count, i + 500); j++) op.set(["m", j], { n: j });
    await op.commit();
  }
}

Deno.test("store export and import for backups", async (t) => {
  await t.step("a snapshot never holds half of a multi-key commit", () =>
    withKv(async (kv) => {
      await fill(kv, 3000);
      // ["a"] sorts before the padding and ["z"] after it. During the first three
      // passes one commit sets both while the list is half way: a single list
      // would read the old ["a"] and the new ["z"].
      await kv.atomic().set(["a"], 0).set(["z"], 0).commit();
      let commits = 0;
      const busy = {
        list(selector: Deno.KvListSelector, options?: Deno.KvListOptions) {
          const inner = kv.list(selector, options);
          return (async function* () {
            for await (const entry of inner) {
              yield entry;
              if (entry.key[0] === "m" && entry.key[1] === 1500 && commits < 3) {
                commits++;
                await kv.atomic().set(["a"], commits).set(["z"], commits).commit();
              }
            }
          })();
        },
      } as unknown as Deno.Kv;
      const busyStore = createStore(busy);
      const { records, passes } = await snapshotEntries(busyStore, 10);
      const value = (name: string) => records.find((r) => r.key[0] === name)?.value;
      assert.equal(value("a"), 3);
      assert.equal(value("z"), 3);
      assert.equal(records.length, 3002);
      assert.equal(passes, 5);
    }));

  await t.step(
    "a key that never holds still makes the snapshot give up",
    () =>
      withKv(async (kv) => {
        await fill(kv, 3000);
        // A KV whose ["projects", 1] changes in the middle of every pass.
        let n = 0;
        const restless = {
          list(selector: Deno.KvListSelector, options?: Deno.KvListOptions) {
            const inner = kv.list(selector, options);
            return (async function* () {
              for await (const entry of inner) {
                yield entry;
                if (entry.key[0] === "m" && entry.key[1] === 1500) {
                  await kv.set(["projects", 1], n++);
                }
              }
            })();
          },
        } as unknown as Deno.Kv;
        const restlessStore = createStore(restless);
        await assert.rejects(snapshotEntries(restlessStore, 3), SnapshotUnstableError);
        assert.equal(n, 3);
      }),
  );

  await t.step(
    "download counters may change while the snapshot is taken",
    () =>
      withKv(async (kv, store) => {
        await fill(kv, 3000);
        let stop = false;
        const writer = (async () => {
          while (!stop) await kv.atomic().sum(["release_downloads", 1], 1n).commit();
        })();
        const { records, passes } = await snapshotEntries(store, 3);
        stop = true;
        await writer;
        assert.equal(passes, 2);
        const counter = records.find((r) => r.key[0] === "release_downloads")?.value;
        assert.ok(counter instanceof Deno.KvU64);
      }),
  );

  await t.step("short-lived rate limit buckets are left out", () =>
    withKv(async (kv, store) => {
      await kv.set(["rate_limit", "key:1"], { tokens: 3, at: 0 }, { expireIn: 60_000 });
      await kv.set(["projects", 1], { id: 1 });
      const keys = [];
      for await (const entry of exportEntries(store)) keys.push(entry.key);
      assert.deepEqual(keys, [["projects", 1]]);
    }));

  await t.step(
    "import writes everything in batches within the commit limits",
    () =>
      withKv(async (kv, store) => {
        assert.equal(await isKvEmpty(store), true);
        const big = "x".repeat(60_000);
        const records: KvRecord[] = [];
        for (let i = 0; i < 1500; i++) records.push({ key: ["small", i], value: { i } });
        for (let i = 0; i < 40; i++) records.push({ key: ["big", i], value: big });
        records.push({ key: ["release_downloads", 1], value: new Deno.KvU64(12n) });
        assert.equal(await importEntries(store, records), records.length);
        assert.equal(await isKvEmpty(store), false);
        const copied: KvRecord[] = [];
        for await (const entry of kv.list({ prefix: [] })) {
          copied.push({ key: entry.key, value: entry.value });
        }
        assert.equal(copied.length, records.length);
        assert.equal((await kv.get<string>(["big", 39])).value, big);
        // A restored counter keeps counting.
        await kv.atomic().sum(["release_downloads", 1], 1n).commit();
        assert.equal((await kv.get<Deno.KvU64>(["release_downloads", 1])).value?.value, 13n);
      }),
  );
});
