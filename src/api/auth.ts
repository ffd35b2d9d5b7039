/**
 * The two gates of the client API. `rateLimitGate` runs first on every
 * /api/v1 request (src/api/routes.ts registers every handler through it) and
 * draws one token: from the key's bucket when the bearer token is a stored
 * key, else from the client address's bucket (so guessing keys is limited
 * too). `acceptedKey` is then the first step of every
 * protected route: the key checks of ../shared/spec/client-api.md "5. Authentication" and "7. Errors", in the
 * order 503, 401, 403. (A plain call rather than a second middleware: each
 * middleware frame costs the hot path.)
 */
import type { Context } from "hono";
import { judgeApiKey } from "../store/access.ts";
import type { AppDeps, AppEnv, PresentedKey } from "../http/app_env.ts";
import { clientAddress } from "../http/client_address.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { recordKeyCheckFailure, recordKvError, recordRateLimited } from "../lib/metrics.ts";
import {
  createKvRateLimiter,
  createMemoryRateLimiter,
  type TakeResult,
} from "../store/rate_limit.ts";
import {
  type ApiKey,
  cachedApiKeyByHash,
  getApiKeyByHash,
  hashApiKeySecret,
} from "../store/mod.ts";

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;
const ALLOWED: TakeResult = { allowed: true };

/**
 * The hashes of recently presented tokens that belong to a stored key:
 * hashing costs a few µs a request, a map lookup a fraction of one. Only
 * tokens of stored keys are remembered (so guessing cannot fill the map), at
 * most `MAX_REMEMBERED_TOKENS` (then it starts over). The key record itself
 * is still read through the store's cache on every request, so a disabled or
 * deleted key is refused at once. The tokens are held in this process's
 * memory only, which also sees every request's headers.
 */
const tokenHashes = new Map<string, string>();
const MAX_REMEMBERED_TOKENS = 10_000;

function rememberToken(token: string, hash: string): void {
  if (tokenHashes.size >= MAX_REMEMBERED_TOKENS) tokenHashes.clear();
  tokenHashes.set(token, hash);
}

/**
 * Draws the request's token: resolves the presented key (kept in the context
 * for `acceptedKey` and the access log) and throws the spec's 429 when its
 * bucket is empty. A plain function the API's handlers call first; it
 * returns a promise only when it had to wait (a key not in the read cache, or
 * the shared `kv` limiter), so a cached key costs no turn of the event loop.
 */
export function rateLimitGate(
  deps: AppDeps,
): (c: Context<AppEnv>) => void | Promise<void> {
  const { config } = deps;
  const rule = { burst: config.rateLimitBurst, perMinute: config.rateLimitPerMinute };
  const limiter = deps.rateLimitKv
    ? createKvRateLimiter(deps.rateLimitKv, rule)
    : createMemoryRateLimiter(rule);
  // A token the cache does not know is looked up in KV only while its address
  // has tokens left: a refused flood of made-up keys costs no KV read. (A real
  // key not cached yet waits on its address for that one lookup.)
  const addressHasTokens = async (c: Context<AppEnv>) => {
    let refused;
    try {
      refused = await limiter.peek(`addr:${clientAddress(c, config.trustProxy)}`);
    } catch {
      return; // the take below reports a limiter that cannot be reached
    }
    if (refused !== null) refuseIfEmpty(refused);
  };
  /**
   * The key `token` presents: at once when the read cache holds its record,
   * else a promise of the KV lookup (made only while the address has tokens).
   */
  const present = (
    c: Context<AppEnv>,
    token: string | undefined,
  ): PresentedKey | Promise<PresentedKey> => {
    if (!token) return { token, key: null, lookupFailed: false };
    const remembered = tokenHashes.get(token);
    const hash = remembered ?? hashApiKeySecret(token);
    const cached = cachedApiKeyByHash(deps.kv, hash);
    if (cached === undefined) return lookUp(c, token, hash, remembered === undefined);
    if (remembered === undefined) rememberToken(token, hash);
    return { token, key: cached, lookupFailed: false };
  };
  const lookUp = async (
    c: Context<AppEnv>,
    token: string,
    hash: string,
    remember: boolean,
  ): Promise<PresentedKey> => {
    if (deps.benchOff !== "rate_limit") await addressHasTokens(c);
    try {
      const key = await getApiKeyByHash(deps.kv, hash);
      if (key !== null && remember) rememberToken(token, hash);
      return { token, key, lookupFailed: false };
    } catch (error) {
      recordKvError("key_lookup");
      console.error("api key lookup failed:", error);
      return { token, key: null, lookupFailed: true };
    }
  };
  // APP_BENCH_OFF=key_check: the last header's key again, without hashing or looking up.
  let benchLast: { header: string; presented: PresentedKey } | undefined;
  const presentedBy = (
    c: Context<AppEnv>,
    header: string,
  ): PresentedKey | Promise<PresentedKey> => {
    if (deps.benchOff !== "key_check") return present(c, BEARER.exec(header)?.[1]);
    if (benchLast?.header === header) return benchLast.presented;
    return Promise.resolve(present(c, BEARER.exec(header)?.[1]))
      .then((presented) => (benchLast = { header, presented }).presented);
  };
  const limiterFailed = (error: unknown): TakeResult => {
    // A rate limiter that cannot be reached must not take the API down with it.
    recordKvError("rate_limit");
    console.error("rate limit check failed:", error);
    return ALLOWED;
  };
  const draw = (c: Context<AppEnv>, presented: PresentedKey): void | Promise<void> => {
    c.set("presentedKey", presented);
    if (presented.key) c.set("keyId", presented.key.id);
    if (deps.benchOff === "rate_limit") return;
    const bucket = presented.key
      ? `key:${presented.key.id}`
      : `addr:${clientAddress(c, config.trustProxy)}`;
    let taken;
    try {
      taken = limiter.take(bucket);
    } catch (error) {
      taken = limiterFailed(error);
    }
    // The in-memory limiter answers at once: no await (and no extra turn) for it.
    if (taken instanceof Promise) {
      return taken.catch(limiterFailed).then((result) => {
        refuseIfEmpty(result);
      });
    }
    refuseIfEmpty(taken);
  };
  return (c) => {
    const presented = presentedBy(c, c.req.header("authorization") ?? "");
    return presented instanceof Promise
      ? presented.then((resolved) => draw(c, resolved))
      : draw(c, presented);
  };
}

/** Throws the spec's 429 when the bucket had no token for this request. */
function refuseIfEmpty(taken: TakeResult): void {
  if (!taken.allowed) {
    recordRateLimited();
    throw new ApiError(429, API_ERRORS.rateLimited, {
      "retry-after": String(taken.retryAfterSeconds),
    });
  }
}

/**
 * The key of a protected request, accepted: present, stored, active,
 * unexpired and allowed to download. Throws the spec's 503, 401 or 403.
 */
export function acceptedKey(c: Context<AppEnv>, deps: AppDeps): ApiKey {
  const { token, key, lookupFailed } = c.get("presentedKey");
  if (lookupFailed) throw new ApiError(503, API_ERRORS.keyServiceUnavailable);
  if (!token) {
    recordKeyCheckFailure("missing");
    throw new ApiError(401, API_ERRORS.missingKey, {
      "www-authenticate": `Bearer realm="${deps.config.serviceRealm}"`,
    });
  }
  const verdict = judgeApiKey(key);
  if (verdict === "invalid") {
    recordKeyCheckFailure("invalid");
    throw new ApiError(401, API_ERRORS.invalidKey, {
      "www-authenticate": `Bearer realm="${deps.config.serviceRealm}", error="invalid_token"`,
    });
  }
  if (verdict === "forbidden") {
    recordKeyCheckFailure("forbidden");
    throw new ApiError(403, API_ERRORS.permissionDenied);
  }
  deps.recordKeyUse(key!.id);
  return key!;
}
