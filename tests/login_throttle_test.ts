/**
 * Issue 9 items 2 and 3: the sign-in throttle reserves each password check
 * before it runs, locks per (user name, address), and on the user name alone
 * only spaces out addresses that already failed, so the owner is never
 * locked out by someone else.
 */
import assert from "node:assert/strict";
import { ADMIN_PASSWORD, ADMIN_USER, AdminClient, createAdminTestApp } from "./admin_helpers.ts";
import {
  LOGIN_THROTTLE,
  releaseLoginAttempt,
  reserveLoginAttempt,
} from "../src/accounts/login_throttle.ts";

Deno.test("issue 9.2: parallel guesses get no more password checks than the throttle allows", async () => {
  await using app = await createAdminTestApp();
  const attacker = new AdminClient(app);
  attacker.address = "198.51.100.40";
  await attacker.page("/admin/login");
  const answers = await Promise.all(
    Array.from(
      { length: 40 },
      () => attacker.post("/admin/login", { username: ADMIN_USER, password: "guess" }),
    ),
  );
  const statuses = answers.map((res) => res.status);
  await Promise.all(answers.map((res) => res.body?.cancel()));
  assert.equal(statuses.filter((s) => s === 401).length, LOGIN_THROTTLE.pair.maxFailures);
  assert.equal(statuses.filter((s) => s === 429).length, 40 - LOGIN_THROTTLE.pair.maxFailures);
});

Deno.test("issue 9.3: nobody can lock the admin out from another address", async (t) => {
  await using app = await createAdminTestApp();
  await t.step("50 failures from one address leave every other address free", async () => {
    const attacker = new AdminClient(app);
    attacker.address = "198.51.100.66";
    await attacker.page("/admin/login");
    for (let i = 0; i < 50; i++) {
      const res = await attacker.post("/admin/login", { username: ADMIN_USER, password: "x" });
      await res.body?.cancel();
      assert.ok(res.status === 401 || res.status === 429);
    }
    for (const address of ["203.0.113.1", "2001:db8::1"]) {
      const owner = new AdminClient(app);
      owner.address = address;
      assert.equal((await owner.signIn(ADMIN_USER, ADMIN_PASSWORD)).status, 303, address);
    }
  });

  await t.step(
    "failures from many addresses space out those with many, never a clean or nearly clean one",
    async () => {
      const store = app.store;
      const now = Date.now();
      const user = "victim";
      // 12 addresses fail 3 times each: the user name is past its free failures,
      // and each of them past the free failures of one address.
      for (let i = 0; i < 12; i++) {
        for (let n = 0; n <= LOGIN_THROTTLE.pairFreeFailures; n++) {
          const { waitMs } = await reserveLoginAttempt(store, {
            username: user,
            address: `10.0.0.${i}`,
          }, now);
          assert.equal(waitMs, 0);
        }
      }
      // An address with many failures gets one check, then waits its turn.
      assert.equal(
        (await reserveLoginAttempt(store, { username: user, address: "10.0.0.1" }, now))
          .waitMs,
        0,
      );
      const spaced = await reserveLoginAttempt(store, { username: user, address: "10.0.0.2" }, now);
      assert.equal(spaced.waitMs, LOGIN_THROTTLE.userSpacingMs);
      // A clean address, and one with at most pairFreeFailures, is never held back (issue 22.2).
      for (let n = 0; n <= LOGIN_THROTTLE.pairFreeFailures; n++) {
        const nearlyClean = await reserveLoginAttempt(
          store,
          { username: user, address: "172.16.0.1" },
          now,
        );
        assert.equal(nearlyClean.waitMs, 0, `failure ${n}`);
      }
      // After the spacing, the waiting address gets its check.
      const later = now + LOGIN_THROTTLE.userSpacingMs;
      assert.equal(
        (await reserveLoginAttempt(store, { username: user, address: "10.0.0.2" }, later)).waitMs,
        0,
      );
    },
  );

  await t.step("the (user, address) lock doubles and a success forgets it", async () => {
    const store = app.store;
    const subject = { username: "doubling", address: "10.9.9.9" };
    let now = Date.now();
    for (let i = 0; i < LOGIN_THROTTLE.pair.maxFailures; i++) {
      assert.equal((await reserveLoginAttempt(store, subject, now)).waitMs, 0);
    }
    assert.equal((await reserveLoginAttempt(store, subject, now)).waitMs, 30_000);
    now += 30_000;
    assert.equal((await reserveLoginAttempt(store, subject, now)).waitMs, 0);
    assert.equal((await reserveLoginAttempt(store, subject, now)).waitMs, 60_000);
    now += 60_000;
    assert.equal((await reserveLoginAttempt(store, subject, now)).waitMs, 0);
    await releaseLoginAttempt(store, subject);
    assert.equal((await reserveLoginAttempt(store, subject, now)).waitMs, 0);
  });
});
