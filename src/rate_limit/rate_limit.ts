/**
 * Token buckets per client: capacity `burst`, refilled at `perMinute / 60`
 * tokens a second. A bucket id names the client (`rateLimitGate` in
 * src/client_api/auth.ts: a key and client address, or an address alone). Two
 * stores, chosen by APP_RATE_LIMIT_STORE:
 *
 * - `memory` (default): a map in this process. A take is a few arithmetic
 *   operations with no I/O, so the limiter costs the hot path nothing.
 *   Buckets are lost on restart, which the contract allows.
 * - `kv`: shared by every instance on one KV. Takes are local as in
 *   `memory`; background rounds reconcile them with the KV every few ms
 *   (see `createKvRateLimiter` for how, and for the accuracy).
 */
import { commitWithRetry } from "../kv/atomic.ts";
import { rateLimitKey } from "../kv/keys.ts";

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
  /** The refusal `take` would give now, or null when it would allow; takes nothing. */
  peek(bucketId: string): TakeResult | null | Promise<TakeResult | null>;
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
/**
 * A bucket drawn from is moved to the end of the use order at most this
 * often (moving costs a map delete and insert): the order, and so which
 * bucket is forgotten first, is exact to this many ms.
 */
const REORDER_MS = 1_000;

interface MemoryBucket extends Bucket {
  /** `nowMs()` when the bucket was last moved to the end of the use order. */
  movedAt: number;
}

export function createMemoryRateLimiter(
  rule: RateLimitRule,
  nowMs: () => number = Date.now,
  maxBuckets = MAX_MEMORY_BUCKETS,
): MemoryRateLimiter {
  // Map order is use order (to REORDER_MS): a bucket is moved to the end when drawn from.
  const buckets = new Map<string, MemoryBucket>();
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
      if (bucket === undefined) {
        if (buckets.size >= maxBuckets) buckets.delete(buckets.keys().next().value!);
        buckets.set(bucketId, { tokens: tokens - 1, at: now, movedAt: now });
        return ALLOWED;
      }
      bucket.tokens = tokens - 1;
      bucket.at = now;
      if (now - bucket.movedAt >= REORDER_MS) {
        buckets.delete(bucketId);
        buckets.set(bucketId, bucket);
        bucket.movedAt = now;
      }
      return ALLOWED;
    },
    peek(bucketId) {
      const tokens = tokensAt(buckets.get(bucketId), nowMs(), rule);
      return tokens < 1 ? refusal(tokens, rule) : null;
    },
    size: () => buckets.size,
  };
}

export interface KvRateLimiterOptions {
  nowMs?: () => number;
  /** Pause between two reconcile rounds, in ms. */
  syncIntervalMs?: number;
  /** Called when a reconcile round fails (the metrics count it). */
  onKvError?: () => void;
}

export interface KvRateLimiter extends RateLimiter {
  /** Buckets this process holds a local view of (tests). */
  size(): number;
  /** No round is scheduled, under way or due: every take so far is written (tests). */
  settled(): boolean;
}

/** The default pause between two reconcile rounds of the `kv` store. */
export const SYNC_INTERVAL_MS = 5;
/** A bucket not reconciled for this long is reconciled before it is drawn from again. */
export const FRESH_MS = 50;
/** getMany reads at most 10 keys. */
const SYNC_CHUNK = 10;
/** After a failed round, the next one waits this long. */
const RETRY_AFTER_ERROR_MS = 1000;

/** A bucket of the `kv` store as this process sees it: tokens and refill time include its takes. */
interface LocalBucket extends Bucket {
  /** The KV entry as this process last wrote or read it; null before the first round. */
  base: Bucket | null;
  /** Takes granted here since the last round; > 0 means the next round has work. */
  pending: number;
  /** `nowMs()` of the last round, or -Infinity before the first. */
  syncedAt: number;
  waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }>;
}

/**
 * The `kv` store: a local bucket per client, drawn from without I/O, and
 * reconciled with the KV entry `["rate_limit", bucket]` in background rounds
 * (every SYNC_INTERVAL_MS while there is something to do). A round subtracts
 * this process's takes since the last round from the entry (one atomic
 * check-and-set per 10 buckets, retried on conflict) and reads back the
 * level left by every instance. A client this process holds no view of
 * (never seen here, or forgotten: a view is forgotten only once it is idle
 * and its bucket full again) draws its first token at once, as from a full
 * bucket, so a fleet's requests, each mostly the first of its client
 * address, do not wait for the KV. Any other bucket this process has not
 * reconciled within FRESH_MS (its first take's round still under way, a
 * quiet client, or rounds slowed down by a slow KV) waits for the next
 * round before its next take, unless the view has no token left: other
 * instances only take from a bucket, so a view holds at least what the KV
 * does, and its refusal needs no round (a flood is refused without I/O).
 *
 * Accuracy: an instance draws only from a view of the bucket at most
 * FRESH_MS old (past that, takes wait for a round), or takes the one token
 * of a client it holds no view of; a view misses only what the other
 * instances granted since their last round. So at most (N − 1) × the tokens
 * one instance grants that client within FRESH_MS plus one round (never more
 * than (N − 1) × BURST) go beyond what one shared bucket would grant, plus
 * one token per instance each time it meets a client again after forgetting
 * it: a view that learnt the bucket empty is forgotten no sooner than the
 * time it takes to fill (BURST / PER_MINUTE minutes). The entry may go below
 * zero (takes already granted elsewhere), so over time the refill rate is
 * exceeded by at most that one token per instance and fill time.
 *
 * Why check-and-set of batched takes rather than KV `sum`: a bucket's cap
 * makes its level depend on the order of takes and refills, which a sum
 * counter cannot hold, and `sum` ignores `expireIn`, so counters of every
 * client address ever seen would stay in the KV forever. A round costs one
 * commit per 10 active buckets, however many requests they had.
 */
export function createKvRateLimiter(
  kv: Deno.Kv,
  rule: RateLimitRule,
  options: KvRateLimiterOptions = {},
): KvRateLimiter {
  const nowMs = options.nowMs ?? Date.now;
  const intervalMs = options.syncIntervalMs ?? SYNC_INTERVAL_MS;
  const perMs = rule.perMinute / 60_000;
  const buckets = new Map<string, LocalBucket>();
  /** Buckets with takes to write or waiters to serve in the next round. */
  const due = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let nextRoundAt = 0;
  let sweptAt = nowMs();
  /** The error of the last round, while the KV keeps failing. */
  let kvError: unknown = null;

  function schedule(): void {
    if (timer !== undefined || running) return;
    timer = setTimeout(() => {
      // A bug here must not end the process through an unhandled rejection.
      round().catch((error) => console.error("rate limit round failed:", error));
    }, Math.max(0, nextRoundAt - Date.now()));
  }

  async function round(): Promise<void> {
    timer = undefined;
    running = true;
    const ids = [...due].filter((id) => buckets.has(id));
    due.clear();
    let failed = false;
    try {
      // Chunks touch different entries: their commits go out together, so a round with many
      // buckets (a fleet's first requests) takes about one commit's time, not one per chunk.
      const chunks = [];
      for (let i = 0; i < ids.length; i += SYNC_CHUNK) chunks.push(ids.slice(i, i + SYNC_CHUNK));
      failed = (await Promise.all(chunks.map(syncChunk))).includes(false);
      sweep();
    } finally {
      running = false;
      nextRoundAt = Date.now() + (failed ? RETRY_AFTER_ERROR_MS : intervalMs);
      if (due.size > 0) schedule();
    }
  }

  /**
   * Reconciles a few buckets with their KV entries; false when the KV failed.
   * What this process drew from a bucket since the last round is its `base`
   * minus its local view, both refilled to now; that is subtracted from the
   * entry as it is now (other instances' takes included). With no other
   * writer the result is exactly the local view.
   */
  async function syncChunk(ids: string[]): Promise<boolean> {
    const local = ids.map((id) => buckets.get(id)!);
    const seen = local.map(({ tokens, at, base, pending }) => ({ tokens, at, base, pending }));
    const keys = ids.map(rateLimitKey);
    let synced: { now: number; levels: number[] };
    try {
      synced = await commitWithRetry(async () => {
        const entries = await kv.getMany<Bucket[]>(keys);
        const now = nowMs();
        const op = kv.atomic();
        const levels = entries.map((entry, i) => {
          const view = seen[i];
          const drawn = view.base === null
            ? view.pending
            : Math.max(0, tokensAt(view.base, now, rule) - tokensAt(view, now, rule));
          const level = tokensAt(entry.value, now, rule) - drawn;
          const msUntilFull = Math.ceil((rule.burst - level) / perMs);
          op.check(entry).set(keys[i], { tokens: level, at: now } satisfies Bucket, {
            expireIn: msUntilFull + 1000,
          });
          return level;
        });
        return { commit: await op.commit(), value: { now, levels } };
      });
    } catch (error) {
      options.onKvError?.();
      kvError = error;
      local.forEach((bucket, i) => {
        for (const waiter of bucket.waiters.splice(0)) waiter.reject(error);
        // A client never reconciled is forgotten with its takes (requests pass while the KV
        // fails anyway), so new addresses during an outage do not pile up here.
        if (bucket.base === null) buckets.delete(ids[i]);
        else if (bucket.pending > 0) due.add(ids[i]);
      });
      return false;
    }
    kvError = null;
    local.forEach((bucket, i) => {
      const level = synced.levels[i];
      // Takes granted here while the round was in flight are left for the next one.
      bucket.pending -= seen[i].pending;
      bucket.base = { tokens: level, at: synced.now };
      bucket.tokens = level - bucket.pending;
      bucket.at = synced.now;
      bucket.syncedAt = synced.now;
      if (bucket.pending > 0) due.add(ids[i]);
      for (const waiter of bucket.waiters.splice(0)) waiter.resolve();
    });
    return true;
  }

  /**
   * Forgets views with nothing to write that would be reconciled before their
   * next use and whose bucket is full again (so a forgotten client starting
   * again from a full bucket is what a shared bucket would mostly say too).
   */
  function sweep(): void {
    const now = nowMs();
    if (now - sweptAt < BUSY_SWEEP_INTERVAL_MS) return;
    sweptAt = now;
    for (const [id, bucket] of buckets) {
      const idle = bucket.pending === 0 && bucket.waiters.length === 0 && !due.has(id);
      if (idle && now - bucket.syncedAt > FRESH_MS && tokensAt(bucket, now, rule) >= rule.burst) {
        buckets.delete(id);
      }
    }
  }

  function takeLocal(id: string, bucket: LocalBucket, now: number): TakeResult {
    const tokens = tokensAt(bucket, now, rule);
    if (tokens < 1) return refusal(tokens, rule);
    bucket.tokens = tokens - 1;
    bucket.at = now;
    bucket.pending++;
    due.add(id);
    schedule();
    return ALLOWED;
  }

  return {
    take(bucketId) {
      const now = nowMs();
      const bucket = buckets.get(bucketId);
      if (bucket === undefined) {
        // No view here: the first token at once, as from a full bucket; the round reconciles it.
        const fresh: LocalBucket = {
          tokens: rule.burst,
          at: now,
          base: null,
          pending: 0,
          syncedAt: -Infinity,
          waiters: [],
        };
        buckets.set(bucketId, fresh);
        return takeLocal(bucketId, fresh, now);
      }
      if (now - bucket.syncedAt <= FRESH_MS) return takeLocal(bucketId, bucket, now);
      // Other instances only take from a bucket: a view holds at least what the KV does, so a
      // view with no token left is a refusal without waiting for the round.
      const tokens = tokensAt(bucket, now, rule);
      if (tokens < 1) return refusal(tokens, rule);
      const waiting = bucket;
      due.add(bucketId);
      schedule();
      // While the KV fails, do not make every request wait for the retry.
      if (kvError !== null) return Promise.reject(kvError);
      return new Promise<void>((resolve, reject) => waiting.waiters.push({ resolve, reject }))
        .then(() => takeLocal(bucketId, waiting, nowMs()));
    },
    peek(bucketId) {
      // A view holds at least what the KV does: its refusal holds, however old it is.
      const bucket = buckets.get(bucketId);
      if (bucket === undefined) return null;
      const tokens = tokensAt(bucket, nowMs(), rule);
      return tokens < 1 ? refusal(tokens, rule) : null;
    },
    size: () => buckets.size,
    settled: () => timer === undefined && !running && due.size === 0,
  };
}
