/**
 * The gate in front of every protected client API route: rate limit first
 * (per key for a stored key, else per client address, so guessing keys is
 * limited too), then the key checks of client-api.md sections 5 and 7.
 */
import { createMiddleware } from "hono/factory";
import { judgeApiKey } from "../access.ts";
import type { AppDeps, AppEnv } from "../app_types.ts";
import { clientAddress } from "../http/client_address.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { recordKeyCheckFailure, recordKvError, recordRateLimited } from "../metrics.ts";
import { takeToken } from "../rate_limit.ts";
import { type ApiKey, getApiKeyByHash, hashApiKeySecret } from "../store/mod.ts";

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

export function apiKeyGate(deps: AppDeps) {
  const { config } = deps;
  const rule = { burst: config.rateLimitBurst, perMinute: config.rateLimitPerMinute };
  return createMiddleware<AppEnv>(async (c, next) => {
    const token = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
    let key: ApiKey | null = null;
    let keyServiceDown = false;
    if (token) {
      try {
        key = await getApiKeyByHash(deps.kv, hashApiKeySecret(token));
        if (key) c.set("keyId", key.id);
      } catch (error) {
        recordKvError("key_lookup");
        console.error("api key lookup failed:", error);
        keyServiceDown = true;
      }
    }

    const bucket = key ? `key:${key.id}` : `addr:${clientAddress(c, config.trustProxy)}`;
    let taken;
    try {
      taken = await takeToken(deps.rateLimitKv, bucket, rule);
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

    if (keyServiceDown) throw new ApiError(503, API_ERRORS.keyServiceUnavailable);
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
