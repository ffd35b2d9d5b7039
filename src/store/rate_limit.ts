/**
 * Token buckets per client: capacity `burst`, refilled at `perMinute / 60`
 * tokens a second. Two stores, chosen by APP_RATE_LIMIT_STORE:
 *
 * - `memory` (default): a map in this process. A take is a few arithmetic
 *   operations with no I/O, so the limiter costs the hot path nothing.
 *   Buckets are lost on restart, which the contract allows.
 * - `kv`: the main Deno KV, so that several instances sharing one KV share
 *   the limit. Each take is an atomic check-and-set of the bucket entry,
 *   retried on conflict; entries expire once the bucket would be full again.
 *   Within one process, takes of the same bucket are queued one after
 *   another: many concurrent requests of one key would otherwise make each
 *   other's commits fail, retry with back-off, and in the end give up.
 */
import { commitWithRetry, rateLimitKey } from "./mod.ts";

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

export interface RateLimiter {
  take(bucketId: string): TakeResult | Promise<TakeResult>;
}

/** Tokens in `bucket` at `now` (a missing bucket is full). */
function tokensAt(bucket: Bucket | null | undefined, now: number, rule: RateLimitRule): number {
  if (bucket == null) return rule.burst;
  const perMs = rule.perMinute / 60_000;
  return Math.min(rule.burst, bucket.tokens + Math.max(0, now - bucket.at) * perMs);
}

/** The refusal for a bucket holding less than one token: whole seconds until one is back. */
function refusal(tokens: number, rule: RateLimitRule): TakeResult {
  const perSecond = rule.perMinute / 60;
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / perSecond)) };
}

export interface MemoryRateLimiter extends RateLimiter {
  take(bucketId: string): TakeResult;
  /** Buckets held in memory (tests). */
  size(): number;
}

const ALLOWED: TakeResult = { allowed: true };
/** Full buckets are dropped from memory this often, */
const SWEEP_INTERVAL_MS = 60_000;
/** or once a second while there are this many, */
const SWEEP_SIZE = 100_000;
const BUSY_SWEEP_INTERVAL_MS = 1_000;
/**
 * and there are never more than this many: beyond it the least recently used
 * bucket is forgotten (its client starts again from a full bucket). Only a
 * flood from this many distinct clients within one refill period gets there.
 */
export const MAX_MEMORY_BUCKETS = 200_000;

export function createMemoryRateLimiter(
  rule: RateLimitRule,
  nowMs: () => number = Date.now,
  maxBuckets = MAX_MEMORY_BUCKETS,
): MemoryRateLimiter {
  // Map order is use order: a bucket is moved to the end each time it is drawn from.
  const buckets = new Map<string, Bucket>();
  let sweptAt = nowMs();

  function sweep(now: number): void {
    sweptAt = now;
    for (const [id, bucket] of buckets) {
      if (tokensAt(bucket, now, rule) >= rule.burst) buckets.delete(id);
    }
  }

  return {
    take(bucketId) {
      const now = nowMs();
      const sinceSweep = now - sweptAt;
      if (
        sinceSweep >= SWEEP_INTERVAL_MS ||
        (buckets.size >= SWEEP_SIZE && sinceSweep >= BUSY_SWEEP_INTERVAL_MS)
      ) {
        sweep(now);
      }
      const bucket = buckets.get(bucketId);
      const tokens = tokensAt(bucket, now, rule);
      if (tokens < 1) return refusal(tokens, rule);
      if (bucket !== undefined) buckets.delete(bucketId);
      else if (buckets.size >= maxBuckets) buckets.delete(buckets.keys().next().value!);
      buckets.set(bucketId, { tokens: tokens - 1, at: now });
      return ALLOWED;
    },
    size: () => buckets.size,
  };
}

export function createKvRateLimiter(
  kv: Deno.Kv,
  rule: RateLimitRule,
  nowMs: () => number = Date.now,
): RateLimiter {
  return { take: (bucketId) => takeToken(kv, bucketId, rule, nowMs) };
}

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
    const tokens = tokensAt(entry.value, now, rule);
    if (tokens < 1) return { commit: { ok: true, versionstamp: "" }, value: refusal(tokens, rule) };
    const left = tokens - 1;
    const msUntilFull = Math.ceil((rule.burst - left) / perMs);
    const commit = await kv.atomic()
      .check(entry)
      .set(key, { tokens: left, at: now } satisfies Bucket, { expireIn: msUntilFull + 1000 })
      .commit();
    return { commit, value: { allowed: true } };
  });
}
