/** The real parts of an app, for those its deps leave out (see `AppParts`). */
import { createMetrics } from "../lib/metrics.ts";
import { createAdoptionRecorder } from "../reports/adoption_recorder.ts";
import { createKeyLookup } from "../credentials/key_lookup.ts";
import { createKvRateLimiter, createMemoryRateLimiter } from "../rate_limit/rate_limit.ts";
import { createReportRecorder } from "../reports/report_recorder.ts";
import type { AnswerSigner } from "../signing/signing_keys.ts";
import type { AppDeps, ServiceDeps } from "./app_env.ts";
import { createOpenResponses } from "./open_responses.ts";
import { contractHeaders } from "./response_headers.ts";

/** `deps` with every part it does not name made as the service runs it. */
export function withDefaultParts(deps: AppDeps): ServiceDeps {
  const metrics = deps.metrics ?? createMetrics();
  const rule = { burst: deps.config.rateLimitBurst, perMinute: deps.config.rateLimitPerMinute };
  const adoption = deps.adoption ??
    createAdoptionRecorder(deps.store, {
      onKvError: () => metrics.recordKvError("adoption"),
      newIdsPerDay: deps.config.adoptionNewIdsPerDay,
    });
  return {
    ...deps,
    metrics,
    rateLimiter: deps.rateLimiter ??
      (deps.rateLimitKv
        ? createKvRateLimiter(deps.rateLimitKv, rule, {
          onKvError: () => metrics.recordKvError("rate_limit"),
        })
        : createMemoryRateLimiter(rule)),
    keyLookup: deps.keyLookup ?? createKeyLookup(deps.store),
    responseHeaders: deps.responseHeaders ?? contractHeaders(deps.config),
    openResponses: deps.openResponses ?? createOpenResponses(),
    // app.ts makes the real one (src/signing/signer.ts); without it, nothing is signed.
    signer: deps.signer ?? UNSIGNED,
    adoption,
    // A report batch first writes the sightings it may trust (docs/reports.md).
    reports: deps.reports ??
      createReportRecorder(deps.store, {
        onKvError: () => metrics.recordKvError("reports"),
        newIdsPerDay: deps.config.reportsNewPerDay,
        settle: adoption.settle,
      }),
  };
}

/** A signer that is switched off: answers keep their bytes and headers. */
const UNSIGNED: AnswerSigner = {
  enabled: false,
  loaded: true,
  reuseSeconds: 60,
  generation: 0,
  signing: false,
  ready: () => Promise.resolve(),
  reload: () => Promise.resolve(),
  sign: () => [],
  keys: () => [],
};
