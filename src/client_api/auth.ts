/**
 * The two gates of the client API. `rateLimitGate` runs first on every
 * /api/v1 request (src/client_api/routes.ts registers every handler through it) and
 * draws one token: from the bucket of the key and client address when the
 * bearer token is a stored key (every install of an app shares its one key,
 * so a fleet is counted address by address, not as one client), else
 * from the client address's own bucket (so guessing keys is limited too). An
 * IPv6 client counts by its /64 (`rateLimitAddress`). `acceptedKey` is then
 * the first step of every protected route: the key checks of ../shared/spec/client-api.md "5. Authentication" and "7. Errors", in the
 * order 503, 401, 403. (A plain call rather than a second middleware: each
 * middleware frame costs the hot path.)
 */
import type { Context } from "hono";
import { judgeApiKey } from "../credentials/access.ts";
import type { AppEnv, PresentedKey, ServiceDeps } from "../http/app_env.ts";
import { clientAddress, rateLimitAddress } from "../http/client_address.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import type { Metrics } from "../lib/metrics.ts";
import type { TakeResult } from "../rate_limit/rate_limit.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import { createUrlCredentialLookup } from "../feeds/url_credential.ts";
import type { KeyLookup } from "../credentials/key_lookup.ts";
import type { ApiKey } from "../credentials/types.ts";

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;
const ALLOWED: TakeResult = { allowed: true };

/**
 * Draws the request's token: resolves the presented key (kept in the context
 * for `acceptedKey` and the access log) and throws the spec's 429 when its
 * bucket is empty. A plain function the API's handlers call first; it
 * returns a promise only when it had to wait (a key not in the read cache, or
 * the shared `kv` limiter), so a cached key costs no turn of the event loop.
 */
export function rateLimitGate(deps: ServiceDeps): (c: Context<AppEnv>) => MaybeAsync<void> {
  const { config, rateLimiter: limiter, keyLookup, metrics } = deps;
  const limitedAddress = (c: Context<AppEnv>) =>
    rateLimitAddress(clientAddress(c, config.trustProxy));
  // A token the cache does not know is looked up in KV only while its address
  // has tokens left: a refused flood of made-up keys costs no KV read.
  const addressHasTokens = async (c: Context<AppEnv>) => {
    let refused;
    try {
      refused = await limiter.peek(`addr:${limitedAddress(c)}`);
    } catch {
      return; // the take below reports a limiter that cannot be reached
    }
    if (refused !== null) refuseIfEmpty(refused, metrics);
  };
  const lookUpFailed = (token: string, error: unknown): PresentedKey => {
    if (error instanceof ApiError) throw error; // the address's 429
    metrics.recordKvError("key_lookup");
    console.error("api key lookup failed:", error);
    return { token, key: null, lookupFailed: true };
  };
  /** The key `token` presents: at once when the read cache holds it, else a promise. */
  // A feed URL's credential (src/feeds/url_credential.ts) is found like a bearer token.
  const credentialLookup = createUrlCredentialLookup(deps.store);
  const present = (
    c: Context<AppEnv>,
    token: string | undefined,
    lookup: KeyLookup = keyLookup,
  ): MaybeAsync<PresentedKey> => {
    if (!token) return { token, key: null, lookupFailed: false };
    let found;
    try {
      found = lookup.find(token, () => addressHasTokens(c));
    } catch (error) {
      return lookUpFailed(token, error);
    }
    if (found instanceof Promise) {
      return found.then(
        (key) => ({ token, key, lookupFailed: false }),
        (error) => lookUpFailed(token, error),
      );
    }
    return { token, key: found, lookupFailed: false };
  };
  const limiterFailed = (error: unknown): TakeResult => {
    // A rate limiter that cannot be reached must not take the API down with it.
    metrics.recordKvError("rate_limit");
    console.error("rate limit check failed:", error);
    return ALLOWED;
  };
  const draw = (c: Context<AppEnv>, presented: PresentedKey): MaybeAsync<void> => {
    c.set("presentedKey", presented);
    if (presented.key) c.set("keyId", presented.key.id);
    const bucket = presented.key
      ? `key:${presented.key.id}@${limitedAddress(c)}`
      : `addr:${limitedAddress(c)}`;
    let taken;
    try {
      taken = limiter.take(bucket);
    } catch (error) {
      taken = limiterFailed(error);
    }
    // The in-memory limiter answers at once: no await (and no extra turn) for it.
    if (taken instanceof Promise) {
      return taken.catch(limiterFailed).then((result) => refuseIfEmpty(result, metrics));
    }
    refuseIfEmpty(taken, metrics);
  };
  return (c) => {
    const bearer = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
    // A feed route under /feeds/c/{credential}/ without a bearer key: the URL's credential.
    const credential = bearer === undefined ? c.req.param("credential") : undefined;
    const presented = credential === undefined
      ? present(c, bearer)
      : present(c, credential, credentialLookup);
    return thenRead(presented, (resolved) => draw(c, resolved));
  };
}

/** Throws the spec's 429 when the bucket had no token for this request. */
function refuseIfEmpty(taken: TakeResult, metrics: Metrics): void {
  if (!taken.allowed) {
    metrics.recordRateLimited();
    throw new ApiError(429, API_ERRORS.rateLimited, {
      "retry-after": String(taken.retryAfterSeconds),
    });
  }
}

/**
 * The key of a protected request, accepted: present, stored, active,
 * unexpired and allowed to download. Throws the spec's 503, 401 or 403.
 */
export function acceptedKey(c: Context<AppEnv>, deps: ServiceDeps): ApiKey {
  const { token, key, lookupFailed } = c.get("presentedKey");
  if (lookupFailed) throw new ApiError(503, API_ERRORS.keyServiceUnavailable);
  if (!token) {
    deps.metrics.recordKeyCheckFailure("missing");
    throw new ApiError(401, API_ERRORS.missingKey, {
      "www-authenticate": `Bearer realm="${deps.config.serviceRealm}"`,
    });
  }
  const verdict = judgeApiKey(key);
  if (verdict === "invalid") {
    deps.metrics.recordKeyCheckFailure("invalid");
    throw new ApiError(401, API_ERRORS.invalidKey, {
      "www-authenticate": `Bearer realm="${deps.config.serviceRealm}", error="invalid_token"`,
    });
  }
  if (verdict === "forbidden") {
    deps.metrics.recordKeyCheckFailure("forbidden");
    throw new ApiError(403, API_ERRORS.permissionDenied);
  }
  deps.recordKeyUse(key!.id);
  return key!;
}
