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
 *   addresses that have failed for that name before get one check every 5 s
 *   between them. An address that never failed for it is never held back by
 *   this rule, so an attacker elsewhere cannot lock the owner out.
 *
 * Counts are forgotten an hour after the last failure (KV `expireIn`).
 */
import { ADDRESS_MAX_LENGTH } from "../lib/limits.ts";
import { sha256Hex } from "../lib/secrets.ts";
import { commitWithRetry } from "./atomic.ts";
import { loginFailuresKey } from "./keys.ts";

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
  return {
    pair: loginFailuresKey("pair", sha256Hex(`${user}\n${address}`)),
    addr: loginFailuresKey("addr", address),
    user: loginFailuresKey("user", user),
  };
}

/** The lock after `count` failures under `rule`, from `nowMs`. */
function lockedUntil(rule: LockRule, count: number, nowMs: number): number {
  const over = count - rule.maxFailures;
  return over < 0 ? 0 : nowMs + Math.min(rule.maxLockMs, rule.baseLockMs * 2 ** over);
}

/** The sign-in throttle of one app (the admin UI's sign-in route makes one). */
export interface LoginThrottle {
  /** `reserveLoginAttempt`, one at a time per (user, address) in this process. */
  reserve(subject: LoginSubject, nowMs?: number): Promise<{ waitMs: number }>;
  /** `releaseLoginAttempt`. */
  release(subject: LoginSubject): Promise<void>;
}

/**
 * A throttle with an in-process queue per subject: reservations of one
 * subject run one after the other, so a burst does not spin on conflicting
 * commits. The commit's checks still serialize reservations of other
 * processes sharing the KV.
 */
export function createLoginThrottle(kv: Deno.Kv): LoginThrottle {
  const queues = new Map<string, Promise<unknown>>();
  const serialized = <T>(key: string, run: () => Promise<T>): Promise<T> => {
    const previous = queues.get(key) ?? Promise.resolve();
    const result = previous.then(run, run);
    const tail = result.catch(() => {});
    queues.set(key, tail);
    tail.then(() => {
      if (queues.get(key) === tail) queues.delete(key);
    });
    return result;
  };
  return {
    reserve: (subject, nowMs = Date.now()) =>
      serialized(
        JSON.stringify(subjectKeys(subject).pair),
        () => reserveLoginAttempt(kv, subject, nowMs),
      ),
    release: (subject) => releaseLoginAttempt(kv, subject),
  };
}

/**
 * Reserves one password check for `subject`: `{ waitMs: 0 }` when it may
 * run now (and counts it as a failure until released), else how long until
 * it may.
 */
export function reserveLoginAttempt(
  kv: Deno.Kv,
  subject: LoginSubject,
  nowMs: number = Date.now(),
): Promise<{ waitMs: number }> {
  const keys = subjectKeys(subject);
  return commitWithRetry(async () => {
    const [pair, addr, user] = await kv.getMany<[LockState, LockState, UserState]>([
      keys.pair,
      keys.addr,
      keys.user,
    ]);
    const pairState = pair.value ?? { count: 0, locked_until: 0 };
    const addrState = addr.value ?? { count: 0, locked_until: 0 };
    const userState = user.value ?? { count: 0, next_at: 0 };
    const failedBefore = pairState.count > 0;
    const spaced = failedBefore && userState.count >= LOGIN_THROTTLE.userFreeFailures;
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
    const commit = await kv.atomic()
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
 * failures are forgotten, and the attempt no longer counts for the address or
 * the user name.
 */
export async function releaseLoginAttempt(kv: Deno.Kv, subject: LoginSubject): Promise<void> {
  const keys = subjectKeys(subject);
  await commitWithRetry(async () => {
    const [addr, user] = await kv.getMany<[LockState, UserState]>([keys.addr, keys.user]);
    const op = kv.atomic().check(addr, user).delete(keys.pair);
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
