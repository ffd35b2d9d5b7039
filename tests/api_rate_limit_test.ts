/** The client API rate limit: a token bucket per key or per client address, in memory or in KV. */
import assert from "node:assert/strict";
import { createApp } from "../app.ts";
import {
  createKvRateLimiter,
  createMemoryRateLimiter,
  MAX_MEMORY_BUCKETS,
  type RateLimiter,
  type RateLimitRule,
} from "../src/rate_limit/rate_limit.ts";
import { setApiKeyActive } from "../src/credentials/api_keys.ts";
import { rateLimitAddress } from "../src/http/client_address.ts";
import { assertError, assertProtectedHeaders, assertSecurityHeaders } from "./asserts.ts";
import { captureErrors, faultyKv } from "./faults.ts";
import { createTestApp, seedKey, seedProject, type TestApp, waitFor } from "./helpers.ts";

async function withLimit(
  limit: { burst: number; perMinute?: number; trustProxy?: boolean; store?: "memory" | "kv" },
  fn: (t: TestApp) => Promise<void>,
  options = {},
) {
  await using t = await createTestApp({
    rateLimitBurst: limit.burst,
    rateLimitPerMinute: limit.perMinute ?? 1,
    trustProxy: limit.trustProxy ?? false,
    rateLimitStore: limit.store ?? "memory",
  }, options);
  await seedProject(t, { slug: "app" });
  await fn(t);
}

async function status(res: Promise<Response>): Promise<number> {
  const response = await res;
  await response.body?.cancel();
  return response.status;
}

for (const store of ["memory", "kv"] as const) {
  Deno.test(`429 rate limit exceeded with an integer Retry-After once the burst is spent (${store} store)`, () =>
    withLimit({ burst: 2, perMinute: 1, store }, async (t) => {
      const { secret } = await seedKey(t);
      assert.equal(await status(t.request("/api/v1/projects", secret)), 200);
      assert.equal(await status(t.request("/api/v1/projects", secret)), 200);
      const res = await t.request("/api/v1/projects", secret);
      assert.equal(res.headers.get("retry-after"), "60");
      assertSecurityHeaders(res);
      assertProtectedHeaders(res);
      await assertError(res, 429, "rate limit exceeded");
      assert.equal(await status(t.request("/api/v1")), 200, "the address bucket is apart");
    }));
}

Deno.test("kv store: instances sharing one KV share the limit; memory store: they do not", async () => {
  for (const [store, expected] of [["kv", 429], ["memory", 200]] as const) {
    await using t = await createTestApp({
      rateLimitBurst: 2,
      rateLimitPerMinute: 1,
      rateLimitStore: store,
    });
    const second = createApp({
      config: t.config,
      store: t.store,
      artifacts: t.artifacts,
      rateLimitKv: store === "kv" ? t.rateLimitKv : undefined,
      recordKeyUse: () => {},
    });
    assert.equal(await status(t.request("/api/v1")), 200);
    assert.equal(await status(t.request("/api/v1")), 200);
    // The kv store writes takes in rounds: the other instance sees them once written.
    if (store === "kv") {
      await waitFor("the takes in the KV", async () => {
        for await (
          const entry of t.rateLimitKv.list<{ tokens: number }>({ prefix: ["rate_limit"] })
        ) {
          if (entry.value.tokens < 1) return true;
        }
        return false;
      });
    }
    // A client an instance holds no view of draws its first token there at once;
    // the next waits for the round that tells it the bucket is spent.
    assert.equal(await status(Promise.resolve(second.request("/api/v1"))), 200, store);
    assert.equal(await status(Promise.resolve(second.request("/api/v1"))), expected, store);
  }
});

Deno.test("every /api/v1 request draws a token: index, unknown paths, write methods too", () =>
  withLimit({ burst: 4 }, async (t) => {
    assert.equal(await status(t.request("/api/v1")), 200);
    assert.equal(await status(t.request("/api/v1/nope")), 404);
    assert.equal(await status(t.request("/api/v1/projects", undefined, { method: "POST" })), 405);
    assert.equal(await status(t.request("/api/v1/projects")), 401);
    for (const path of ["/api/v1", "/api/v1/nope", "/api/v1/projects", "/api/v1/releases/x"]) {
      await assertError(await t.request(path), 429, "rate limit exceeded");
    }
  }));

Deno.test("/healthz and paths outside /api/v1 draw no token", () =>
  withLimit({ burst: 1 }, async (t) => {
    for (let i = 0; i < 3; i++) {
      assert.equal(await status(t.request("/healthz")), 200);
      assert.equal(await status(t.request("/elsewhere")), 404);
    }
    assert.equal(await status(t.request("/api/v1")), 200);
    assert.equal(await status(t.request("/api/v1")), 429);
  }));

Deno.test("the rate limit is checked before 503, 401, 403, 400 and 404", () =>
  withLimit({ burst: 2 }, async (t) => {
    const { secret: noDownload } = await seedKey(t, { can_download: false });
    // Known from another address: the key is in the read cache from now on.
    assert.equal(await status(t.requestFrom("10.0.0.5", "/api/v1/projects", noDownload)), 403);
    for (let i = 0; i < 2; i++) assert.equal(await status(t.request("/api/v1")), 200);
    await assertError(await t.request("/api/v1/projects"), 429, "rate limit exceeded");
    await assertError(await t.request("/api/v1/projects", "uds_bad"), 429, "rate limit exceeded");
    await assertError(await t.request("/api/v1/releases/x"), 429, "rate limit exceeded");
    // The key from this address: its own bucket, two tokens.
    for (let i = 0; i < 2; i++) {
      assert.equal(await status(t.request("/api/v1/projects", noDownload)), 403);
    }
    await assertError(
      await t.request("/api/v1/releases/x", noDownload),
      429,
      "rate limit exceeded",
    );
  }));

Deno.test("issue 9.9: a request the rate limit refuses makes no KV lookup of an unknown token", async () => {
  let lookups = 0;
  await withLimit(
    { burst: 2 },
    async (t) => {
      for (let i = 0; i < 2; i++) {
        assert.equal(await status(t.request("/api/v1/projects", `uds_guess${i}`)), 401);
      }
      assert.equal(lookups, 2);
      for (let i = 0; i < 20; i++) {
        await assertError(
          await t.request("/api/v1/projects", `uds_more${i}`),
          429,
          "rate limit exceeded",
        );
      }
      assert.equal(lookups, 2, "no lookup for refused requests");
    },
    {
      wrapKv: (kv: Deno.Kv) =>
        faultyKv(kv, {
          failGet: (key) => {
            if (key[0] === "api_keys_by_hash") lookups++;
            return false;
          },
        }),
    },
  );
});

Deno.test("the rate limit is checked before 503 when the key service is down", () =>
  withLimit(
    { burst: 1 },
    async (t) => {
      await captureErrors(async () => {
        await assertError(
          await t.request("/api/v1/projects", "uds_x"),
          503,
          "api key service unavailable",
        );
        await assertError(await t.request("/api/v1/projects", "uds_x"), 429, "rate limit exceeded");
      });
    },
    { wrapKv: (kv: Deno.Kv) => faultyKv(kv, { failGet: (key) => key[0] === "api_keys_by_hash" }) },
  ));

Deno.test("a stored key draws from the bucket of the key and address, apart from the address's own", () =>
  withLimit({ burst: 2 }, async (t) => {
    const a = await seedKey(t);
    const b = await seedKey(t);
    for (let i = 0; i < 2; i++) {
      assert.equal(await status(t.request("/api/v1/projects", a.secret)), 200);
    }
    assert.equal(await status(t.request("/api/v1/projects", a.secret)), 429);
    assert.equal(
      await status(t.request("/api/v1/projects", b.secret)),
      200,
      "other key unaffected",
    );
    assert.equal(await status(t.request("/api/v1")), 200, "the address bucket is untouched");
  }));

Deno.test("one key from many addresses: each address has its own bucket, a flood stays at its own", () =>
  withLimit({ burst: 3, store: "memory" }, async (t) => {
    const { secret } = await seedKey(t);
    // One address floods the key: its burst, then 429s.
    const flood = [];
    for (let i = 0; i < 10; i++) {
      flood.push(await status(t.requestFrom("10.0.0.1", "/api/v1/projects", secret)));
    }
    assert.deepEqual(flood, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
    // A fleet on the same key, one address each, three requests each: never a 429.
    for (let i = 0; i < 200; i++) {
      for (let n = 0; n < 3; n++) {
        const address = `10.1.${i >> 8}.${i & 255}`;
        assert.equal(await status(t.requestFrom(address, "/api/v1/projects", secret)), 200);
      }
    }
    assert.equal(
      await status(t.requestFrom("10.0.0.1", "/api/v1/projects", secret)),
      429,
      "the flooding address is still refused",
    );
  }));

for (const store of ["memory", "kv"] as const) {
  Deno.test(`an IPv6 client counts by its /64, an IPv4-mapped one by its IPv4 address (${store} store)`, () =>
    withLimit({ burst: 2, store }, async (t) => {
      const { secret } = await seedKey(t);
      const from = (address: string) => status(t.requestFrom(address, "/api/v1/projects", secret));
      assert.equal(await from("2001:db8:1:2::1"), 200);
      assert.equal(await from("2001:DB8:1:2:ffff:0:0:7"), 200);
      assert.equal(await from("2001:db8:1:2:aaaa::9"), 429, "another address of the same /64");
      assert.equal(await from("2001:db8:1:3::1"), 200, "the next /64 is another client");
      assert.equal(await from("::ffff:192.0.2.7"), 200);
      assert.equal(await from("192.0.2.7"), 200);
      assert.equal(await from("::ffff:192.0.2.7"), 429, "the same IPv4 client");
      // Without a key, the address's own bucket counts the same way.
      assert.equal(await status(t.requestFrom("2001:db8:9:9::1", "/api/v1")), 200);
      assert.equal(await status(t.requestFrom("2001:db8:9:9::2", "/api/v1")), 200);
      assert.equal(await status(t.requestFrom("2001:db8:9:9::3", "/api/v1")), 429);
    }));
}

Deno.test("a disabled key still draws from its key's bucket", () =>
  withLimit({ burst: 1 }, async (t) => {
    const { apiKey, secret } = await seedKey(t);
    await setApiKeyActive(t.store, apiKey.id, false);
    assert.equal(await status(t.request("/api/v1/projects", secret)), 401);
    assert.equal(await status(t.request("/api/v1/projects", secret)), 429);
    assert.equal(await status(t.request("/api/v1")), 200, "the address bucket is untouched");
  }));

Deno.test("no key, or a token that is not a stored key, draws from the address's bucket", () =>
  withLimit({ burst: 3 }, async (t) => {
    assert.equal(await status(t.requestFrom("192.0.2.1", "/api/v1/projects")), 401);
    assert.equal(await status(t.requestFrom("192.0.2.1", "/api/v1/projects", "uds_guess1")), 401);
    assert.equal(await status(t.requestFrom("192.0.2.1", "/api/v1/projects", "uds_guess2")), 401);
    assert.equal(
      await status(t.requestFrom("192.0.2.1", "/api/v1/projects", "uds_guess3")),
      429,
      "guessing keys is limited",
    );
    assert.equal(
      await status(t.requestFrom("192.0.2.2", "/api/v1/projects")),
      401,
      "other address",
    );
  }));

Deno.test("X-Forwarded-For is ignored unless APP_TRUST_PROXY is true", () =>
  withLimit({ burst: 1, trustProxy: false }, async (t) => {
    const from = (xff: string) =>
      t.requestFrom("127.0.0.1", "/api/v1", undefined, { headers: { "x-forwarded-for": xff } });
    assert.equal(await status(from("198.51.100.1")), 200);
    assert.equal(await status(from("198.51.100.2")), 429, "same peer, same bucket");
  }));

Deno.test("with APP_TRUST_PROXY the client is the right-most X-Forwarded-For entry", () =>
  withLimit({ burst: 1, trustProxy: true }, async (t) => {
    const from = (xff: string) =>
      t.requestFrom("127.0.0.1", "/api/v1", undefined, { headers: { "x-forwarded-for": xff } });
    assert.equal(await status(from("198.51.100.1")), 200);
    assert.equal(await status(from("198.51.100.2")), 200, "another client");
    assert.equal(await status(from("203.0.113.7, 198.51.100.1")), 429, "spoofed left entries");
    assert.equal(await status(from(" 1.1.1.1 ,198.51.100.2 ")), 429);
    // Without the header the proxy's own address is used.
    assert.equal(await status(t.requestFrom("127.0.0.1", "/api/v1")), 200);
  }));

Deno.test("a key's bucket per address follows APP_TRUST_PROXY: the right-most X-Forwarded-For entry, else the peer", async (t) => {
  for (const trustProxy of [true, false]) {
    await t.step(
      `APP_TRUST_PROXY=${trustProxy}`,
      () =>
        withLimit({ burst: 1, trustProxy }, async (app) => {
          const { secret } = await seedKey(app);
          const from = (xff: string) =>
            status(app.requestFrom("127.0.0.1", "/api/v1/projects", secret, {
              headers: { "x-forwarded-for": xff },
            }));
          assert.equal(await from("198.51.100.1"), 200);
          assert.equal(await from("198.51.100.2"), trustProxy ? 200 : 429);
          assert.equal(await from("203.0.113.9, 198.51.100.1"), 429);
        }),
    );
  }
});

Deno.test("Retry-After is the whole seconds until a token is back, at least 1", async (t) => {
  for (const [perMinute, expected] of [[1, 60], [6, 10], [60, 1], [600, 1], [7, 9]]) {
    await t.step(
      `${perMinute} per minute → ${expected}s`,
      () =>
        withLimit({ burst: 1, perMinute }, async (app) => {
          assert.equal(await status(app.request("/api/v1")), 200);
          const res = await app.request("/api/v1");
          assert.equal(res.status, 429);
          assert.equal(res.headers.get("retry-after"), String(expected));
          await res.body?.cancel();
        }),
    );
  }
});

const LIMITERS: [string, (rule: RateLimitRule, clock: () => number) => Promise<RateLimiter>][] = [
  ["memory", (rule, clock) => Promise.resolve(createMemoryRateLimiter(rule, clock))],
  [
    "kv",
    async (rule, clock) =>
      createKvRateLimiter(await Deno.openKv(":memory:"), rule, { nowMs: clock }),
  ],
];

for (const [store, create] of LIMITERS) {
  Deno.test(`token bucket (${store}): capacity BURST, refilled at PER_MINUTE/60 a second`, async () => {
    let now = 1_000_000;
    const limiter = await create({ burst: 3, perMinute: 60 }, () => now); // one token a second
    const take = () => Promise.resolve(limiter.take("bucket"));
    for (let i = 0; i < 3; i++) assert.deepEqual(await take(), { allowed: true });
    assert.deepEqual(await take(), { allowed: false, retryAfterSeconds: 1 });
    now += 500;
    assert.deepEqual(await take(), { allowed: false, retryAfterSeconds: 1 }, "half a token");
    now += 500;
    assert.deepEqual(await take(), { allowed: true }, "one token after a second");
    assert.equal((await take()).allowed, false);
    now += 3_600_000; // an hour: the bucket holds no more than BURST
    for (let i = 0; i < 3; i++) assert.deepEqual(await take(), { allowed: true });
    assert.equal((await take()).allowed, false);
    assert.equal((await limiter.take("other")).allowed, true, "buckets are separate");
  });
}

Deno.test("memory buckets: full buckets are dropped, so the map does not grow forever", () => {
  let now = 0;
  const limiter = createMemoryRateLimiter({ burst: 2, perMinute: 60 }, () => now);
  for (let i = 0; i < 1000; i++) limiter.take(`addr:${i}`);
  assert.equal(limiter.size(), 1000);
  now += 30_000; // every bucket is full again long before the next sweep
  limiter.take("addr:0");
  assert.equal(limiter.size(), 1000, "no sweep within the interval");
  now += 30_000;
  limiter.take("addr:late");
  assert.equal(limiter.size(), 1, "only the bucket just drawn from is kept");
  assert.deepEqual(limiter.take("addr:late"), { allowed: true });
  assert.equal(
    limiter.take("addr:late").allowed,
    false,
    "a swept bucket starts full, not fresh twice",
  );
});

Deno.test("kv store: concurrent takes of one bucket grant exactly BURST, one commit a round", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let commits = 0;
    const counted = new Proxy(kv, {
      get(target, prop) {
        if (prop === "atomic") commits++;
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const limiter = createKvRateLimiter(counted, { burst: 100, perMinute: 1 }, {
      nowMs: () => 42_000,
    });
    const results = await Promise.all(
      Array.from({ length: 300 }, () => Promise.resolve(limiter.take("shared"))),
    );
    assert.equal(results.filter((r) => r.allowed).length, 100, "exactly BURST granted");
    await waitFor("the rounds", () => limiter.settled());
    assert.ok(commits <= 3, `${commits} commits for 300 takes`);
    const entry = await kv.get<{ tokens: number }>(["rate_limit", "shared"]);
    assert.equal(entry.value?.tokens, 0, "the KV entry holds the takes");
  } finally {
    kv.close();
  }
});

Deno.test("kv store: instances on one KV share a bucket, within one round's takes", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const rule = { burst: 20, perMinute: 1 };
    const instances = [0, 1, 2].map(() => createKvRateLimiter(kv, rule));
    let allowed = 0;
    for (let i = 0; i < 90; i++) {
      if ((await instances[i % 3].take("key:1")).allowed) allowed++;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    // Each instance may grant what it sees within one round before it hears of the others.
    assert.ok(allowed >= 20 && allowed <= 26, `${allowed} granted for a burst of 20`);
    await waitFor("the rounds", () => instances.every((limiter) => limiter.settled()));
    for (const limiter of instances) {
      assert.equal((await limiter.take("key:1")).allowed, false, "every instance sees it spent");
    }
  } finally {
    kv.close();
  }
});

Deno.test("a failing rate limiter lets requests through and logs the cause", async () => {
  await using t = await createTestApp({
    rateLimitBurst: 2,
    rateLimitPerMinute: 1,
    rateLimitStore: "kv",
  });
  try {
    t.rateLimitKv.close();
    // The first token of a client is drawn without the KV; the next ones wait for a round, which
    // fails: they pass.
    const { value: statuses, logged } = await captureErrors(async () => [
      await status(t.request("/api/v1")),
      await status(t.request("/api/v1")),
      await status(t.request("/api/v1")),
    ]);
    assert.deepEqual(statuses, [200, 200, 200]);
    assert.match(logged, /rate limit check failed/);
  } finally {
    t.rateLimitKv.close = () => {};
  }
});

Deno.test("memory buckets: at most maxBuckets; the least recently used is forgotten first", () => {
  let now = 0;
  const limiter = createMemoryRateLimiter({ burst: 1, perMinute: 1 }, () => now, 3);
  for (const id of ["a", "b", "c"]) assert.equal(limiter.take(id).allowed, true);
  now += 61_000; // a, b and c are full again, but swept only when the next take comes
  assert.equal(limiter.take("a").allowed, true, "a drew again (after the sweep)");
  assert.equal(limiter.size(), 1);
  for (const id of ["b", "c"]) assert.equal(limiter.take(id).allowed, true);
  assert.equal(limiter.take("d").allowed, true, "a fourth client: the oldest, a, is forgotten");
  assert.equal(limiter.size(), 3);
  assert.equal(limiter.take("b").allowed, false, "b is still remembered, and empty");
  assert.equal(limiter.take("a").allowed, true, "a starts again from a full bucket");
});

Deno.test("memory buckets: the use order moves a drawn bucket to the end at most once a second", async (t) => {
  await t.step("drawn 1 s after its last move: moved, so another bucket is forgotten first", () => {
    let now = 0;
    const limiter = createMemoryRateLimiter({ burst: 2, perMinute: 1 }, () => now, 3);
    for (const id of ["a", "b", "c"]) assert.equal(limiter.take(id).allowed, true);
    now = 1_000;
    assert.equal(limiter.take("a").allowed, true, "a's last token");
    assert.equal(limiter.take("d").allowed, true, "a fourth client: b is now the oldest");
    assert.equal(limiter.take("a").allowed, false, "a is remembered, and empty");
    assert.equal(limiter.take("b").allowed, true, "b was forgotten: a full bucket again");
  });
  await t.step("drawn again within 1 s: keeps its place (the order is exact to a second)", () => {
    let now = 0;
    const limiter = createMemoryRateLimiter({ burst: 2, perMinute: 1 }, () => now, 3);
    for (const id of ["a", "b", "c"]) assert.equal(limiter.take(id).allowed, true);
    now = 500;
    assert.equal(limiter.take("a").allowed, true, "a's last token");
    assert.equal(limiter.take("d").allowed, true, "a fourth client: a is still the oldest");
    assert.equal(limiter.take("a").allowed, true, "a was forgotten: a full bucket again");
  });
});

Deno.test("memory buckets: a full map is swept at most once a second, not on every take", () => {
  let now = 0;
  const limiter = createMemoryRateLimiter({ burst: 5, perMinute: 1 }, () => now);
  for (let i = 0; i < 100_000; i++) limiter.take(`addr:${i}`);
  const started = performance.now();
  for (let i = 0; i < 2_000; i++) limiter.take("busy");
  const perTake = (performance.now() - started) / 2_000;
  assert.ok(perTake < 0.05, `${perTake.toFixed(3)} ms a take: a sweep ran on every take`);
  now += 1_000;
  limiter.take("busy"); // one sweep: nothing is full yet, nothing dropped
  assert.equal(limiter.size(), 100_001);
});

Deno.test("rateLimitAddress: IPv4 as it is, IPv6 as its /64, anything else kept and cut", () => {
  const cases: [string, string][] = [
    ["127.0.0.1", "127.0.0.1"],
    ["::1", "0:0:0:0::/64"],
    ["::ffff:192.0.2.7", "192.0.2.7"],
    ["0:0:0:0:0:FFFF:192.0.2.7", "192.0.2.7"],
    ["2001:DB8:0001:0002:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:db8:1:2::9", "2001:db8:1:2::/64"],
    ["2001:db8::", "2001:db8:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"],
    ["1:2:3:4:5:6:7", "1:2:3:4:5:6:7"],
    ["1::2::3", "1::2::3"],
    ["zz::1", "zz::1"],
    ["unknown", "unknown"],
    ["x".repeat(500), "x".repeat(64)],
    [":".repeat(500), ":".repeat(64)],
  ];
  for (const [address, expected] of cases) {
    assert.equal(rateLimitAddress(address), expected, address);
  }
});

Deno.test("memory buckets under address churn: one key from 250,000 addresses keeps at most MAX_MEMORY_BUCKETS", () => {
  let now = 0;
  const limiter = createMemoryRateLimiter({ burst: 60, perMinute: 120 }, () => now);
  let most = 0;
  for (let i = 0; i < 250_000; i++) {
    if (i % 1000 === 0) now += 10; // 100,000 new addresses a second
    const address = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    assert.equal(limiter.take(`key:1@${address}`).allowed, true);
    most = Math.max(most, limiter.size());
  }
  assert.ok(most <= MAX_MEMORY_BUCKETS, `${most} buckets`);
  // Past SWEEP_SIZE (100,000) full buckets go once a second: fewer are left than that.
  assert.ok(limiter.size() < 100_000, `${limiter.size()} buckets`);
  now += 60_000; // the sweep of every minute
  limiter.take("key:1@10.255.255.255");
  assert.equal(limiter.size(), 1, "full buckets are swept");
});

Deno.test("kv store under address churn: local views are forgotten once idle", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let now = 5_000_000;
    const limiter = createKvRateLimiter(kv, { burst: 60, perMinute: 120 }, { nowMs: () => now });
    await Promise.all(
      Array.from(
        { length: 2_000 },
        (_, i) => Promise.resolve(limiter.take(`key:1@10.0.${i >> 8}.${i & 255}`)),
      ),
    );
    assert.equal(limiter.size(), 2_000);
    // Every local view is idle once its take is written; a round a second of the clock sweeps.
    for (let i = 0; i < 100 && limiter.size() > 1; i++) {
      await waitFor("the rounds", () => limiter.settled());
      now += 1_000;
      assert.equal((await limiter.take("key:1@10.9.9.9")).allowed, true);
    }
    assert.ok(limiter.size() <= 1, `${limiter.size()} local views left`);
  } finally {
    kv.close();
  }
});

Deno.test("kv store: a client's first token is drawn at once, with no KV read or write on its path", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let kvCalls = 0;
    const counted = new Proxy(kv, {
      get(target, prop) {
        if (prop === "atomic" || prop === "getMany" || prop === "get") kvCalls++;
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const limiter = createKvRateLimiter(counted, { burst: 60, perMinute: 120 });
    for (let i = 0; i < 100; i++) {
      const taken = limiter.take(`key:1@10.0.0.${i}`);
      assert.deepEqual(taken, { allowed: true }, "answered at once, not a promise");
    }
    assert.equal(kvCalls, 0, "the takes waited for no KV call");
    await waitFor("the rounds", () => limiter.settled());
    assert.ok(kvCalls > 0, "a round wrote them afterwards");
    const entry = await kv.get<{ tokens: number }>(["rate_limit", "key:1@10.0.0.7"]);
    assert.equal(entry.value?.tokens, 59, "the KV entry holds the take");
  } finally {
    kv.close();
  }
});

Deno.test("kv store: a view is forgotten only once its bucket is full again, so an emptied client gets no fresh first token", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let now = 7_000_000;
    const limiter = createKvRateLimiter(kv, { burst: 3, perMinute: 6 }, { nowMs: () => now });
    const settle = () => waitFor("the rounds", () => limiter.settled());
    for (let i = 0; i < 3; i++) assert.equal((await limiter.take("flood")).allowed, true);
    assert.equal((await limiter.take("flood")).allowed, false);
    await settle();
    now += 2_000; // 0.2 of a token back: a round now sweeps (a second since the last sweep)
    assert.equal((await limiter.take("other")).allowed, true);
    await settle();
    assert.equal((await limiter.take("flood")).allowed, false, "still known, still empty");
    assert.equal(limiter.size(), 2);
    now += 30_000; // full again
    assert.equal((await limiter.take("other")).allowed, true);
    await settle();
    now += 2_000;
    assert.equal((await limiter.take("other")).allowed, true);
    await settle();
    assert.equal(limiter.size(), 1, "the full, idle view of flood is forgotten");
  } finally {
    kv.close();
  }
});

Deno.test("kv store: a view with no token left refuses at once, however old, without waiting for a round", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let now = 9_000_000;
    const limiter = createKvRateLimiter(kv, { burst: 2, perMinute: 6 }, { nowMs: () => now });
    for (let i = 0; i < 2; i++) assert.equal((await limiter.take("flood")).allowed, true);
    await waitFor("the rounds", () => limiter.settled());
    now += 5_000; // the view is old (FRESH_MS is 50 ms); half a token back
    assert.deepEqual(limiter.take("flood"), { allowed: false, retryAfterSeconds: 5 });
    assert.deepEqual(limiter.peek("flood"), { allowed: false, retryAfterSeconds: 5 });
    now += 5_000; // a whole token in the view: the shared bucket may hold it, the round says
    const taken = limiter.take("flood");
    assert.ok(taken instanceof Promise, "a view with a token waits for the round");
    assert.deepEqual(await taken, { allowed: true });
  } finally {
    kv.close();
  }
});

Deno.test("kv store: while the KV fails, new addresses' views do not pile up", async () => {
  const kv = await Deno.openKv(":memory:");
  const limiter = createKvRateLimiter(kv, { burst: 60, perMinute: 120 }, { onKvError: () => {} });
  kv.close();
  const { logged } = await captureErrors(async () => {
    for (let i = 0; i < 500; i++) {
      assert.deepEqual(limiter.take(`key:1@10.0.${i >> 8}.${i & 255}`), { allowed: true });
    }
    await waitFor("the failed round", () => limiter.settled());
  });
  assert.equal(limiter.size(), 0, `${limiter.size()} views kept: ${logged}`);
});
