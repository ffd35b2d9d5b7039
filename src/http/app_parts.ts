/** The real parts of an app, for those its deps leave out (see `AppParts`). */
import { createMetrics } from "../lib/metrics.ts";
import { createKeyLookup } from "../store/key_lookup.ts";
import { createKvRateLimiter, createMemoryRateLimiter } from "../store/rate_limit.ts";
import type { AppDeps, ServiceDeps } from "./app_env.ts";
import { createSigner } from "../signing/signer.ts";
import { createOpenResponses } from "./open_responses.ts";
import { contractHeaders } from "./response_headers.ts";

/** `deps` with every part it does not name made as the service runs it. */
export function withDefaultParts(deps: AppDeps): ServiceDeps {
  const metrics = deps.metrics ?? createMetrics();
  const rule = { burst: deps.config.rateLimitBurst, perMinute: deps.config.rateLimitPerMinute };
  return {
    ...deps,
    metrics,
    rateLimiter: deps.rateLimiter ??
      (deps.rateLimitKv
        ? createKvRateLimiter(deps.rateLimitKv, rule, {
          onKvError: () => metrics.recordKvError("rate_limit"),
        })
        : createMemoryRateLimiter(rule)),
    keyLookup: deps.keyLookup ?? createKeyLookup(deps.kv),
    responseHeaders: deps.responseHeaders ?? contractHeaders(deps.config),
    openResponses: deps.openResponses ?? createOpenResponses(),
    signer: deps.signer ?? createSigner({
      kv: deps.kv,
      dataDir: deps.config.dataDir,
      ttlSeconds: deps.config.signingTtlSeconds,
      enabled: deps.config.signing,
    }),
  };
}
