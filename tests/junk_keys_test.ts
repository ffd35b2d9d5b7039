/**
 * Issue 22 item 3 against the real server: a flood of made-up keys from one
 * address empties that address's bucket, but a key that was accepted before
 * does not depend on that bucket again, even after an unrelated write has
 * emptied the read cache.
 */
import assert from "node:assert/strict";
import { makeDataTempDir, removedAtEnd, startServer } from "./server_process.ts";
import { openDataDir } from "./data_dir_fixtures.ts";

Deno.test("issue 22.3: junk keys from the same address do not starve a valid key", async () => {
  const dataDir = await makeDataTempDir("junk-keys-test");
  await using _removed = removedAtEnd(dataDir);
  const fx = await openDataDir(dataDir);
  try {
    await fx.project({ name: "Desktop", slug: "desktop" });
    const { secret } = await fx.key({ name: "valid" });
    await using server = await startServer(dataDir, {
      APP_CLIENT_RATE_LIMIT_BURST: "10",
      APP_CLIENT_RATE_LIMIT_PER_MINUTE: "10",
    });
    const get = async (key: string) => {
      const res = await fetch(`${server.baseUrl}/api/v1/projects`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await res.body?.cancel();
      return res.status;
    };

    assert.equal(await get(secret), 200);
    const junk = await Promise.all(
      Array.from({ length: 30 }, (_, i) => get(`uds_${"x".repeat(30)}${i}`)),
    );
    assert.ok(junk.includes(429), "the flood empties the address's bucket");
    assert.equal(await get("uds_one_more_made_up_key_of_the_flood"), 429);

    // An unrelated write, by another process on the same KV: every instance empties its cache.
    await fx.project({ name: "Unrelated", slug: "unrelated" });
    await new Promise((resolve) => setTimeout(resolve, 300));

    assert.equal(await get(secret), 200);
    assert.equal(await get(secret), 200);
  } finally {
    fx.close();
  }
});
