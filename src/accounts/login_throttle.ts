/**
 * Slows down password guessing without letting anyone lock the owner out.
 *
 * Every password check is first reserved here, in one atomic KV commit, and
 * counted as a failure at once; a successful check gives the reservation back
 * (`releaseLoginAttempt`). So however many guesses arrive at the same moment,
 * no more are checked than the rules allow. The rules:
 *
 * - per (user name, address): 5 failures, then a lock of 30 s that doubles
 *   with every further failure (1 min, 2 min … at most 15 min);
 * - per address, whatever the user name: 20 failures, then the same locks;
 * - per user name, from every address together: once it has 10 failures,
 *   addresses that have failed for that name more than twice get one check
 *   every 5 s between them. An address with at most 2 failures for the name,
 *   or one that has signed in as that name before (within 30 days), is never
 *   held back by this rule: an attacker elsewhere cannot lock the owner out,
 *   even after the owner's own typo.
 *
 * Checks of one (user name, address) run one at a time in a process
 * (`createLoginThrottle`): parallel sign-ins with the right password all
 * succeed, each after the one before gave its reservation back; at most
 * `MAX_WAITING_CHECKS` wait, more are refused as "too many at once".
 *
 * Counts are forgotten an hour after the last failure (KV `expireIn`).
 */
import { ADDRESS_MAX_LENGTH } from "../lib/limits.ts";
import { createKeyedQueue } from "../lib/keyed_queue.ts";
import { sha256Hex } from "../lib/secrets.ts";
import { commitWithRetry } from "../kv/atomic.ts";
import { loginFailuresKey, loginTrustedKey } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export interface LockRule {
  maxFailures: number;
  baseLockMs: number;
  maxLockMs: number;
}

export const LOGIN_THROTTLE = {
  pair: { maxFailures: 5, baseLockMs: 30_000, maxLockMs: 15 * 60_000 } as LockRule,
  addr: { maxFailures: 20, baseLockMs: 30_000, maxLockMs: 15 * 60_000 } as LockRule,
  /** Failures of a user name (all addresses) after which failed addresses are spaced out. */
  userFreeFailures: 10,
  /** Failures of one address for a user name that never get it spaced out. */
  pairFreeFailures: 2,
  /** How long a sign-in keeps its address out of the user name's spacing. */
  trustedForMs: 30 * 24 * 3_600_000,
  /** The spacing of checks from failed addresses for a user name under attack. */
  userSpacingMs: 5_000,
  forgetAfterMs: 3_600_000,
};

interface LockState {
  count: number;
  locked_until: number;
}

interface UserState {
  count: number;
  /** When the next check from an address that failed before may run. */
  next_at: number;
}

export interface LoginSubject {
  username: string;
  address: string;
}

function subjectKeys(subject: LoginSubject) {
  const user = sha256Hex(subject.username.trim().toLowerCase());
  const address = subject.address.slice(0, ADDRESS_MAX_LENGTH);
  const pair = sha256Hex(`${user}\n${address}`);
  return {
    trusted: loginTrustedKey(pair),
    pair: loginFailuresKey("pair", pair),
    addr: loginFailuresKey("addr", address),
    user: loginFailuresKey("user", user),
  };
}

/** The lock after `count` failures under `rule`, from `nowMs`. */
function lockedUntil(rule: LockRule, count: number, nowMs: number): number {
  const over = count - rule.maxFailures;
  return over < 0 ? 0 : nowMs + Math.min(rule.maxLockMs, rule.baseLockMs * 2 ** over);
}

/** Most checks of one (user name, address) that wait for the one running. */
export const MAX_WAITING_CHECKS = 16;

/** How a throttled password check went. */
export type ThrottledCheck<T> =
  /** Refused: the failures so far lock this check out for a while. */
  | { refused: "locked"; retryAfterSeconds: number }
  /** Refused: too many checks of this (user, address) were already waiting. */
  | { refused: "busy"; retryAfterSeconds: number }
  /** Checked: what `verify` found (null: wrong password). */
  | { refused: false; found: T | null };

/** The sign-in throttle of one app (the admin UI makes one). */
export interface LoginThrottle {
  /**
   * Runs `verify` (a password check) under the throttle: reserved first,
   * given back when it found the user. Checks of one (user, address) run one
   * after the other in this process, so a parallel burst of right passwords
   * all succeed and a burst of wrong ones gets no more checks than the rules
   * allow; the commit's checks still order them against other processes.
   */
  check<T>(subject: LoginSubject, verify: () => Promise<T | null>): Promise<ThrottledCheck<T>>;
}

export function createLoginThrottle(store: Store): LoginThrottle {
  // Two in-process queues: checks of one (user, address) one at a time, and
  // the KV commits of one user name one at a time (every address's commit
  // writes the user name's count, so parallel ones would only collide).
  const pairs = createKeyedQueue(MAX_WAITING_CHECKS);
  const users = createKeyedQueue(Infinity);
  return {
    check<T>(
      subject: LoginSubject,
      verify: () => Promise<T | null>,
    ): Promise<ThrottledCheck<T>> {
      const keys = subjectKeys(subject);
      const user = JSON.stringify(keys.user);
      const checked = pairs.run(JSON.stringify(keys.pair), async (): Promise<ThrottledCheck<T>> => {
        const { waitMs } = await users.run(user, () => reserveLoginAttempt(store, subject))!;
        if (waitMs > 0) return { refused: "locked", retryAfterSeconds: Math.ceil(waitMs / 1000) };
        const found = await verify();
        if (found !== null) await users.run(user, () => releaseLoginAttempt(store, subject));
        return { refused: false, found };
      });
      return checked ?? Promise.resolve({ refused: "busy", retryAfterSeconds: 1 });
    },
  };
}

/**
 * Reserves one password check for `subject`: `{ waitMs: 0 }` when it may
 * run now (and counts it as a failure until released), else how long until
 * it may.
 */
export function reserveLoginAttempt(
  store: Store,
  subject: LoginSubject,
  nowMs: number = Date.now(),
): Promise<{ waitMs: number }> {
  const keys = subjectKeys(subject);
  return commitWithRetry(async () => {
    const [pair, addr, user, trusted] = await store.kv.getMany<
      [LockState, LockState, UserState, true]
    >(
      [keys.pair, keys.addr, keys.user, keys.trusted],
    );
    const pairState = pair.value ?? { count: 0, locked_until: 0 };
    const addrState = addr.value ?? { count: 0, locked_until: 0 };
    const userState = user.value ?? { count: 0, next_at: 0 };
    // The user name's spacing holds back only addresses with many failures for it.
    const spaced = trusted.value === null &&
      pairState.count > LOGIN_THROTTLE.pairFreeFailures &&
      userState.count >= LOGIN_THROTTLE.userFreeFailures;
    const waitMs = Math.max(
      pairState.locked_until - nowMs,
      addrState.locked_until - nowMs,
      spaced ? userState.next_at - nowMs : 0,
      0,
    );
    // Refused: nothing to write, so nothing that could conflict.
    if (waitMs > 0) return { commit: { ok: true } as Deno.KvCommitResult, value: { waitMs } };

    const options = { expireIn: LOGIN_THROTTLE.forgetAfterMs };
    const pairCount = pairState.count + 1;
    const addrCount = addrState.count + 1;
    const commit = await store.kv.atomic()
      .check(pair, addr, user)
      .set(keys.pair, {
        count: pairCount,
        locked_until: lockedUntil(LOGIN_THROTTLE.pair, pairCount, nowMs),
      }, options)
      .set(keys.addr, {
        count: addrCount,
        locked_until: lockedUntil(LOGIN_THROTTLE.addr, addrCount, nowMs),
      }, options)
      .set(keys.user, {
        count: userState.count + 1,
        next_at: spaced ? nowMs + LOGIN_THROTTLE.userSpacingMs : userState.next_at,
      }, options)
      .commit();
    return { commit, value: { waitMs: 0 } };
  });
}

/**
 * Gives back a reservation whose password was right: the (user, address)
 * failures are forgotten, the attempt no longer counts for the address or
 * the user name, and the address is trusted for the name (no spacing).
 */
export async function releaseLoginAttempt(store: Store, subject: LoginSubject): Promise<void> {
  const keys = subjectKeys(subject);
  await commitWithRetry(async () => {
    const [addr, user] = await store.kv.getMany<[LockState, UserState]>([keys.addr, keys.user]);
    const op = store.kv.atomic().check(addr, user).delete(keys.pair)
      .set(keys.trusted, true, { expireIn: LOGIN_THROTTLE.trustedForMs });
    const options = { expireIn: LOGIN_THROTTLE.forgetAfterMs };
    if (addr.value) {
      // The reservation was allowed, so any earlier lock had run out.
      op.set(keys.addr, { count: Math.max(0, addr.value.count - 1), locked_until: 0 }, options);
    }
    if (user.value) {
      op.set(keys.user, { ...user.value, count: Math.max(0, user.value.count - 1) }, options);
    }
    return { commit: await op.commit(), value: undefined };
  });
}
