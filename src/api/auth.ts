/**
 * The two gates of the client API. `rateLimitGate` runs first on every
 * /api/v1 request and draws one token: from the key's bucket when the bearer
 * token is a stored key, else from the client address's bucket (so guessing
 * keys is limited too). `apiKeyGate` then guards the protected routes with the
 * key checks of client-api.md sections 5 and 7, in the order 503, 401, 403.
 */
import { createMiddleware } from "hono/factory";
import { judgeApiKey } from "../store/access.ts";
import type { AppDeps, AppEnv, PresentedKey } from "../http/app_env.ts";
import { clientAddress } from "../http/client_address.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { recordKeyCheckFailure, recordKvError, recordRateLimited } from "../lib/metrics.ts";
import { createKvRateLimiter, createMemoryRateLimiter } from "../store/rate_limit.ts";
import { getApiKeyByHash, hashApiKeySecret } from "../store/mod.ts";

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;
const ALLOWED = { allowed: true } as const;

let benchLast: { header: string; presented: Promise<PresentedKey> } | undefined;

async function resolvePresentedKey(deps: AppDeps, header: string): Promise<PresentedKey> {
  if (deps.benchOff === "key_check") {
    // Measuring: the last answer again, without hashing or looking up.
    if (benchLast?.header !== header) {
      benchLast = {
        header,
        presented: resolvePresentedKey({ ...deps, benchOff: undefined }, header),
      };
    }
    return benchLast.presented;
  }
  const token = BEARER.exec(header)?.[1];
  if (!token) return { token, key: null, lookupFailed: false };
  try {
    return {
      token,
      key: await getApiKeyByHash(deps.kv, hashApiKeySecret(token)),
      lookupFailed: false,
    };
  } catch (error) {
    recordKvError("key_lookup");
    console.error("api key lookup failed:", error);
    return { token, key: null, lookupFailed: true };
  }
}

export function rateLimitGate(deps: AppDeps) {
  const { config } = deps;
  const rule = { burst: config.rateLimitBurst, perMinute: config.rateLimitPerMinute };
  const limiter = deps.rateLimitKv
    ? createKvRateLimiter(deps.rateLimitKv, rule)
    : createMemoryRateLimiter(rule);
  return createMiddleware<AppEnv>(async (c, next) => {
    const presented = await resolvePresentedKey(deps, c.req.header("authorization") ?? "");
    c.set("presentedKey", presented);
    if (presented.key) c.set("keyId", presented.key.id);
    const bucket = presented.key
      ? `key:${presented.key.id}`
      : `addr:${clientAddress(c, config.trustProxy)}`;
    let taken;
    try {
      taken = deps.benchOff === "rate_limit" ? ALLOWED : await limiter.take(bucket);
    } catch (error) {
      // A rate limiter that cannot be reached must not take the API down with it.
      recordKvError("rate_limit");
      console.error("rate limit check failed:", error);
      taken = { allowed: true } as const;
    }
    if (!taken.allowed) {
      recordRateLimited();
      throw new ApiError(429, API_ERRORS.rateLimited, {
        "retry-after": String(taken.retryAfterSeconds),
      });
    }
    await next();
  });
}

export function apiKeyGate(deps: AppDeps) {
  const { config } = deps;
  return createMiddleware<AppEnv>(async (c, next) => {
    const { token, key, lookupFailed } = c.get("presentedKey");
    if (lookupFailed) throw new ApiError(503, API_ERRORS.keyServiceUnavailable);
    if (!token) {
      recordKeyCheckFailure("missing");
      throw new ApiError(401, API_ERRORS.missingKey, {
        "www-authenticate": `Bearer realm="${config.serviceRealm}"`,
      });
    }
    const verdict = judgeApiKey(key);
    if (verdict === "invalid") {
      recordKeyCheckFailure("invalid");
      throw new ApiError(401, API_ERRORS.invalidKey, {
        "www-authenticate": `Bearer realm="${config.serviceRealm}", error="invalid_token"`,
      });
    }
    if (verdict === "forbidden") {
      recordKeyCheckFailure("forbidden");
      throw new ApiError(403, API_ERRORS.permissionDenied);
    }
    c.set("apiKey", key!);
    deps.recordKeyUse(key!.id);
    await next();
  });
}
