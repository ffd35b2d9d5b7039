/**
 * Slows down password guessing. Failed sign-ins are counted per user name and
 * per client address; past a threshold each further failure locks that
 * subject out for a doubling time (30 s, 1 min, 2 min … at most 15 min).
 * Counts are forgotten an hour after the last failure (KV `expireIn`).
 */
import { sha256Hex } from "../lib/secrets.ts";
import { commitWithRetry } from "./atomic.ts";
import { loginFailuresKey } from "./keys.ts";

export interface ThrottleRule {
  maxFailures: number;
  baseLockMs: number;
  maxLockMs: number;
  forgetAfterMs: number;
}

export const LOGIN_THROTTLE: Record<"user" | "addr", ThrottleRule> = {
  user: { maxFailures: 5, baseLockMs: 30_000, maxLockMs: 15 * 60_000, forgetAfterMs: 3_600_000 },
  addr: { maxFailures: 20, baseLockMs: 30_000, maxLockMs: 15 * 60_000, forgetAfterMs: 3_600_000 },
};

interface LoginFailures {
  count: number;
  locked_until: number;
}

export interface LoginSubject {
  username: string;
  address: string;
}

function subjectKeys(subject: LoginSubject): Array<["user" | "addr", Deno.KvKey]> {
  return [
    ["user", loginFailuresKey("user", sha256Hex(subject.username.trim().toLowerCase()))],
    ["addr", loginFailuresKey("addr", subject.address.slice(0, 128))],
  ];
}

/** Milliseconds until the user name or the address may try again; 0 when allowed now. */
export async function loginLockedFor(
  kv: Deno.Kv,
  subject: LoginSubject,
  nowMs: number = Date.now(),
): Promise<number> {
  const keys = subjectKeys(subject).map(([, key]) => key);
  const entries = await kv.getMany<LoginFailures[]>(keys);
  let wait = 0;
  for (const entry of entries) {
    if (entry.value) wait = Math.max(wait, entry.value.locked_until - nowMs);
  }
  return wait;
}

export async function recordLoginFailure(
  kv: Deno.Kv,
  subject: LoginSubject,
  nowMs: number = Date.now(),
): Promise<void> {
  for (const [kind, key] of subjectKeys(subject)) {
    const rule = LOGIN_THROTTLE[kind];
    await commitWithRetry(async () => {
      const entry = await kv.get<LoginFailures>(key);
      const count = (entry.value?.count ?? 0) + 1;
      const over = count - rule.maxFailures;
      const lockMs = over < 0 ? 0 : Math.min(rule.maxLockMs, rule.baseLockMs * 2 ** over);
      const value: LoginFailures = { count, locked_until: nowMs + lockMs };
      const commit = await kv.atomic()
        .check(entry)
        .set(key, value, { expireIn: rule.forgetAfterMs })
        .commit();
      return { commit, value: undefined };
    });
  }
}

/** A successful sign-in forgets the user name's failures (not the address's). */
export async function clearLoginFailures(kv: Deno.Kv, username: string): Promise<void> {
  await kv.delete(subjectKeys({ username, address: "" })[0][1]);
}
