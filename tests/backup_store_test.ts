import assert from "node:assert/strict";
import {
  exportEntries,
  importEntries,
  isKvEmpty,
  type KvRecord,
  snapshotEntries,
  SnapshotUnstableError,
} from "../src/store/mod.ts";

/** Enough entries that one list takes several pages (and several awaits). */
async function fill(kv: Deno.Kv, count: number) {
  for (let i = 0; i < count; i += 500) {
    const op = kv.atomic();
    for (let j = i; j < Math.min(count, i + 500); j++) op.set(["m", j], { n: j });
    await op.commit();
  }
}

Deno.test("store export and import for backups", async (t) => {
  await t.step("a snapshot never holds half of a multi-key commit", async () => {
    const kv = await Deno.openKv(":memory:");
    await fill(kv, 3000);
    // ["a"] sorts before the padding and ["z"] after it: a naive list reads them far apart.
    await kv.atomic().set(["a"], 0).set(["z"], 0).commit();
    let stop = false;
    let commits = 0;
    const writer = (async () => {
      for (let i = 1; i <= 40 && !stop; i++) {
        await kv.atomic().set(["a"], i).set(["z"], i).commit();
        commits++;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 4));
      }
    })();
    const { records, passes } = await snapshotEntries(kv, 100);
    stop = true;
    await writer;
    const value = (name: string) => records.find((r) => r.key[0] === name)?.value;
    assert.equal(value("a"), value("z"));
    assert.equal(records.length, 3002);
    assert.ok(passes >= 2);
    assert.ok(commits > 0);
    kv.close();
  });

  await t.step("a key that never holds still makes the snapshot give up", async () => {
    const kv = await Deno.openKv(":memory:");
    await fill(kv, 3000);
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop; i++) await kv.set(["projects", 1], { i });
    })();
    await assert.rejects(snapshotEntries(kv, 3), SnapshotUnstableError);
    stop = true;
    await writer;
    kv.close();
  });

  await t.step("download counters may change while the snapshot is taken", async () => {
    const kv = await Deno.openKv(":memory:");
    await fill(kv, 3000);
    let stop = false;
    const writer = (async () => {
      while (!stop) await kv.atomic().sum(["release_downloads", 1], 1n).commit();
    })();
    const { records, passes } = await snapshotEntries(kv, 3);
    stop = true;
    await writer;
    assert.equal(passes, 2);
    const counter = records.find((r) => r.key[0] === "release_downloads")?.value;
    assert.ok(counter instanceof Deno.KvU64);
    kv.close();
  });

  await t.step("short-lived rate limit buckets are left out", async () => {
    const kv = await Deno.openKv(":memory:");
    await kv.set(["rate_limit", "key:1"], { tokens: 3, at: 0 }, { expireIn: 60_000 });
    await kv.set(["projects", 1], { id: 1 });
    const keys = [];
    for await (const entry of exportEntries(kv)) keys.push(entry.key);
    assert.deepEqual(keys, [["projects", 1]]);
    kv.close();
  });

  await t.step("import writes everything in batches within the commit limits", async () => {
    const kv = await Deno.openKv(":memory:");
    assert.equal(await isKvEmpty(kv), true);
    const big = "x".repeat(60_000);
    const records: KvRecord[] = [];
    for (let i = 0; i < 1500; i++) records.push({ key: ["small", i], value: { i } });
    for (let i = 0; i < 40; i++) records.push({ key: ["big", i], value: big });
    records.push({ key: ["release_downloads", 1], value: new Deno.KvU64(12n) });
    assert.equal(await importEntries(kv, records), records.length);
    assert.equal(await isKvEmpty(kv), false);
    const copied: KvRecord[] = [];
    for await (const entry of kv.list({ prefix: [] })) {
      copied.push({ key: entry.key, value: entry.value });
    }
    assert.equal(copied.length, records.length);
    assert.equal((await kv.get<string>(["big", 39])).value, big);
    // A restored counter keeps counting.
    await kv.atomic().sum(["release_downloads", 1], 1n).commit();
    assert.equal((await kv.get<Deno.KvU64>(["release_downloads", 1])).value?.value, 13n);
    kv.close();
  });
});
