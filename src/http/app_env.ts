import type { Config } from "../lib/config.ts";
import type { Logger } from "../lib/log.ts";
import type { ArtifactStore } from "../storage/mod.ts";
import type { Metrics } from "../lib/metrics.ts";
import type { AdoptionRecorder } from "../reports/adoption_recorder.ts";
import type { KeyLookup } from "../credentials/key_lookup.ts";
import type { RateLimiter } from "../rate_limit/rate_limit.ts";
import type { ReportRecorder } from "../reports/report_recorder.ts";
import type { AnswerSigner } from "../signing/signing_keys.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Store } from "../kv/store.ts";
import type { OpenResponses } from "./open_responses.ts";
import type { ResponseHeaders } from "./response_headers.ts";

/** What the HTTP layers need from the outside world; tests pass in-memory ones. */
export interface AppDeps extends Partial<AppParts> {
  config: Config;
  /** The KV and what this process keeps beside it (src/kv/store.ts). */
  store: Store;
  /** Where artifact bytes live: the data dir (`fs`) or a bucket (`s3`). */
  artifacts: ArtifactStore;
  /**
   * The KV that holds the token buckets when they are shared between
   * instances (APP_RATE_LIMIT_STORE=kv); absent, they live in process memory.
   */
  rateLimitKv?: Deno.Kv;
  recordKeyUse: (keyId: number) => void;
  /** Access log and service events; absent means no logging (tests). */
  logger?: Logger;
}

/**
 * The parts every client API request goes through. Each has a real default
 * (`appParts` in app.ts makes the ones not given); `deno task bench` passes
 * no-op ones to measure what each costs (bench/layer_server.ts).
 */
export interface AppParts {
  /** Request metrics and the service's counters (main.ts shares one with /metrics). */
  metrics: Metrics;
  /** The token buckets of the client API (per key, or per address for unknown keys). */
  rateLimiter: RateLimiter;
  /** Finds the stored key a bearer token presents. */
  keyLookup: KeyLookup;
  /** The headers the contract adds to responses. */
  responseHeaders: ResponseHeaders;
  /** The responses still being sent, so a shutdown can end them (see observe.ts). */
  openResponses: OpenResponses;
  /** Signs client API answers when APP_SIGNING is on (docs/signing.md). */
  signer: AnswerSigner;
  /** Records which release each client was answered (docs/rollouts.md "Adoption"). */
  adoption: AdoptionRecorder;
  /** Writes install reports in batches off the request path (docs/reports.md). */
  reports: ReportRecorder;
}

/** What the API and admin surfaces are built from: the deps with every part resolved. */
export type ServiceDeps = AppDeps & AppParts;

/** The bearer token of a client API request, resolved once by the rate limiter. */
export interface PresentedKey {
  /**
   * The token after `Bearer `, or else a feed URL's credential (src/feeds/url_credential.ts);
   * undefined when there is neither.
   */
  token: string | undefined;
  /** The stored key the token belongs to, or null. */
  key: ApiKey | null;
  /** True when the key could not be looked up because KV failed. */
  lookupFailed: boolean;
}

export interface AppEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    /**
     * Set by the observing middleware (src/http/observe.ts), so the not-found
     * handler does not observe its request a second time.
     */
    observed?: boolean;
    presentedKey: PresentedKey;
    /** The TCP peer's address, once read (src/http/client_address.ts). */
    peerAddress?: string;
    /** Id of the presented key once it is found, accepted or not (for the access log). */
    keyId?: number;
    /**
     * The body size of a response built with a known size (client API JSON),
     * so the request observer need not read the response's headers: reading
     * them makes Deno drop the native response it prepared for a fixed body.
     */
    bodyBytes?: number;
    /** Set by the download route: marks the response as an artifact download. */
    releaseId?: number;
    /**
     * Set by the download route when the answer counts as a download: called
     * once its last byte has been sent (or, for an answer without a body such
     * as a redirect, once it is answered). A download cut off never counts.
     */
    onDownloaded?: () => void;
  };
}
