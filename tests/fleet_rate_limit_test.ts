/**
 * The client rate limit against the real server, from real source addresses
 * (127.0.0.0/8): a fleet of installs sharing the app's one key, each from its
 * own address, gets no 429 at the default limit (120 a minute, burst 60),
 * while one address flooding the same key gets its 429s and the fleet keeps
 * getting 200s during the flood. The 10,000-install figure is in
 * docs/benchmarks.md, from bench/fleet_rate_limit.ts (the same driver).
 */
import assert from "node:assert/strict";
import { FLOOD_ADDRESS, getFrom, runFleet } from "../bench/fleet_rate_limit.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { makeDataTempDir, removedAtEnd, startServer } from "./server_process.ts";

const INSTALLS = 1_500;

for (const store of ["memory", "kv"] as const) {
  Deno.test(`one key, ${INSTALLS} installs from distinct addresses: no 429; a flooding address gets its own (${store} store)`, async () => {
    const dataDir = await makeDataTempDir("fleet-rate-limit");
    await using _removed = removedAtEnd(dataDir);
    const fx = await openDataDir(dataDir);
    let key: string;
    try {
      const project = await fx.project({ name: "Desktop", slug: "desktop" });
      await fx.release(project.id, "1.0.0", new Uint8Array(64));
      key = (await fx.key({ name: "the app's one key" })).secret;
    } finally {
      fx.close();
    }
    // The settings' defaults: 120 a minute, burst 60.
    await using server = await startServer(dataDir, {
      APP_CLIENT_RATE_LIMIT_BURST: "",
      APP_CLIENT_RATE_LIMIT_PER_MINUTE: "",
      APP_RATE_LIMIT_STORE: store,
    });
    const common = {
      baseUrl: server.baseUrl,
      key,
      path: "/api/v1/projects/desktop/releases/latest",
      installs: INSTALLS,
      concurrency: 16,
    };

    const alone = await runFleet(common);
    assert.deepEqual(alone.fleet.statuses, { 200: INSTALLS }, server.output().slice(-2000));

    // Each install asks again while one address floods the same key.
    const flooded = await runFleet({ ...common, flood: { concurrency: 4 } });
    assert.deepEqual(flooded.fleet.statuses, { 200: INSTALLS }, "the fleet is not refused");
    const flood = flooded.flood!;
    // Its burst of 60 and the refill of 2 a second while it ran, nothing more.
    const earned = 60 + Math.ceil(2 * flood.seconds) + 2;
    assert.ok(
      (flood.statuses[200] ?? 0) <= earned,
      `the flood gets its burst and refill (${earned}): ${JSON.stringify(flood.statuses)}`,
    );
    assert.ok(flood.statuses[429] >= flood.requests - earned, JSON.stringify(flood.statuses));
    assert.ok(flood.statuses[429] >= 40, "the flood's first 100 requests alone empty its bucket");
    assert.equal(flood.badRetryAfter, 0, "every 429 carries an integer Retry-After");

    // After the flood: the flooding address is still refused, the fleet's addresses are not.
    const url = new URL(common.path, server.baseUrl);
    const headers = { authorization: `Bearer ${key}` };
    const refused = await getFrom({ url, localAddress: FLOOD_ADDRESS, headers });
    assert.equal(refused.status, 429);
    assert.match(refused.retryAfter ?? "", /^[1-9]\d*$/);
    const other = await getFrom({ url, localAddress: "127.200.0.1", headers });
    assert.equal(other.status, 200);
  });
}
