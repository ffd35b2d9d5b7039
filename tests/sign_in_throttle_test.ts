/**
 * The sign-in throttle against the real server: issue 22 item 2 (an owner
 * with a typo or two is not queued behind a botnet) and issue 19 item 6
 * (parallel sign-ins with the right password all succeed; a refusal says
 * what happened and is audited). Client addresses are set through
 * X-Forwarded-For with APP_TRUST_PROXY=true, as behind the reference proxy.
 */
import assert from "node:assert/strict";
import { AdminClient, type Sender } from "./admin_helpers.ts";
import { makeDataTempDir, removedAtEnd, startServer } from "./server_process.ts";

const PASSWORD = "test-password-123";

/** Sends each request to `baseUrl` as if it came from `address` through the proxy. */
function forwardedSender(baseUrl: string): Sender {
  return (path, init, address) => {
    const headers = new Headers(init.headers);
    headers.set("x-forwarded-for", address);
    return fetch(baseUrl + path, { ...init, headers, redirect: "manual" });
  };
}

function clientFrom(baseUrl: string, address: string): AdminClient {
  const client = new AdminClient(forwardedSender(baseUrl));
  client.address = address;
  return client;
}

async function signInStatus(client: AdminClient, password: string): Promise<number> {
  const res = await client.post("/admin/login", { username: "admin", password });
  await res.body?.cancel();
  return res.status;
}

Deno.test("sign-in throttle on the real server", async (t) => {
  const dataDir = await makeDataTempDir("throttle-test");
  await using _removed = removedAtEnd(dataDir);
  await using server = await startServer(dataDir, { APP_TRUST_PROXY: "true" });

  await t.step(
    "issue 22.2: an owner with a recent typo signs in while 80 addresses guess",
    async () => {
      const owner = clientFrom(server.baseUrl, "203.0.113.10");
      await owner.page("/admin/login");
      assert.equal(await signInStatus(owner, "typo-password"), 401);

      // 80 addresses, 3 wrong guesses each: the user name is far past its
      // free failures and every one of them is spaced out.
      const attackers = Array.from(
        { length: 80 },
        (_, i) => clientFrom(server.baseUrl, `198.51.100.${i + 1}`),
      );
      await Promise.all(attackers.map((attacker) => attacker.page("/admin/login")));
      for (let round = 0; round < 3; round++) {
        const statuses = await Promise.all(
          attackers.map((attacker) => signInStatus(attacker, `guess-${round}`)),
        );
        assert.ok(statuses.every((status) => status === 401 || status === 429), `${statuses}`);
      }
      const spaced = await Promise.all(attackers.map((a) => signInStatus(a, "guess-more")));
      assert.ok(spaced.filter((status) => status === 429).length >= 79, "attackers are spaced");

      // The owner, one failure behind them, is not in that lane.
      await owner.page("/admin/login");
      assert.equal(await signInStatus(owner, PASSWORD), 303);
    },
  );

  await t.step(
    "issue 22.2: an address that signed in before is not spaced, even after more typos",
    async () => {
      const owner = clientFrom(server.baseUrl, "203.0.113.10");
      await owner.page("/admin/login");
      for (let i = 0; i < 3; i++) assert.equal(await signInStatus(owner, `typo-${i}`), 401);
      assert.equal(await signInStatus(owner, PASSWORD), 303);
    },
  );

  await t.step("issue 19.6: 8 parallel sign-ins with the right password all succeed", async () => {
    const clients = Array.from(
      { length: 8 },
      () => clientFrom(server.baseUrl, "203.0.113.20"),
    );
    await Promise.all(clients.map((client) => client.page("/admin/login")));
    const statuses = await Promise.all(clients.map((client) => signInStatus(client, PASSWORD)));
    assert.deepEqual(statuses, Array(8).fill(303));
    // Each has a working session.
    for (const client of clients) {
      const res = await client.fetch("/admin");
      await res.body?.cancel();
      assert.equal(res.status, 200);
    }
  });

  await t.step("issue 19.6: a refused sign-in says why and is audited", async () => {
    const guesser = clientFrom(server.baseUrl, "203.0.113.30");
    await guesser.page("/admin/login");
    let refused: Response | undefined;
    for (let i = 0; i < 8 && refused === undefined; i++) {
      const res = await guesser.post("/admin/login", { username: "admin", password: "nope" });
      if (res.status === 429) refused = res;
      else await res.body?.cancel();
    }
    assert.ok(refused, "the pair lock refuses after its free failures");
    assert.match(await refused.text(), /Too many failed sign-ins\. Try again in \d+ seconds\./);
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);

    const admin = clientFrom(server.baseUrl, "203.0.113.40");
    assert.equal((await admin.signIn("admin", PASSWORD)).status, 303);
    const { html } = await admin.page("/admin/audit");
    assert.match(html, /auth\.sign_in_refused/);
  });
});
