/**
 * A token bucket per client, kept in Deno KV: capacity `burst`, refilled at
 * `perMinute / 60` tokens a second. Each take is an atomic check-and-set of
 * the bucket entry, retried on conflict, so several instances sharing one KV
 * share the limit. Entries expire once the bucket would be full again.
 *
 * Within one process, takes of the same bucket are queued one after another:
 * many concurrent requests of one key would otherwise make each other's
 * commits fail, retry with back-off, and in the end give up.
 */
import { commitWithRetry, rateLimitKey } from "./store/mod.ts";

export interface RateLimitRule {
  burst: number;
  perMinute: number;
}

interface Bucket {
  tokens: number;
  /** Milliseconds since the epoch of the last refill. */
  at: number;
}

export type TakeResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export function takeToken(
  kv: Deno.Kv,
  bucketId: string,
  rule: RateLimitRule,
  nowMs: () => number = Date.now,
): Promise<TakeResult> {
  return inTurn(kv, bucketId, () => takeTokenNow(kv, bucketId, rule, nowMs));
}

/** The tail of the queue of each bucket, per KV. */
const queues = new WeakMap<Deno.Kv, Map<string, Promise<unknown>>>();

/** Runs `task` after every earlier task of the same bucket has settled. */
function inTurn<T>(kv: Deno.Kv, bucketId: string, task: () => Promise<T>): Promise<T> {
  let tails = queues.get(kv);
  if (tails === undefined) queues.set(kv, tails = new Map());
  const previous = tails.get(bucketId);
  const result = previous === undefined ? task() : previous.then(task, task);
  const tail = result.then(() => {}, () => {});
  tails.set(bucketId, tail);
  tail.then(() => {
    if (tails.get(bucketId) === tail) tails.delete(bucketId);
  });
  return result;
}

function takeTokenNow(
  kv: Deno.Kv,
  bucketId: string,
  rule: RateLimitRule,
  nowMs: () => number,
): Promise<TakeResult> {
  const perMs = rule.perMinute / 60_000;
  const key = rateLimitKey(bucketId);
  return commitWithRetry<TakeResult>(async () => {
    const entry = await kv.get<Bucket>(key);
    const now = nowMs();
    const bucket = entry.value;
    const tokens = bucket === null
      ? rule.burst
      : Math.min(rule.burst, bucket.tokens + Math.max(0, now - bucket.at) * perMs);
    if (tokens < 1) {
      const retryAfterSeconds = Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
      return {
        commit: { ok: true, versionstamp: "" },
        value: { allowed: false, retryAfterSeconds },
      };
    }
    const left = tokens - 1;
    const msUntilFull = Math.ceil((rule.burst - left) / perMs);
    const commit = await kv.atomic()
      .check(entry)
      .set(key, { tokens: left, at: now } satisfies Bucket, { expireIn: msUntilFull + 1000 })
      .commit();
    return { commit, value: { allowed: true } };
  });
}
