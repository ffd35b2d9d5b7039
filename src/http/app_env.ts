import type { Config } from "../lib/config.ts";
import type { Logger } from "../lib/log.ts";
import type { ArtifactStore } from "../storage/mod.ts";
import type { ApiKey } from "../store/mod.ts";

/** What the HTTP layers need from the outside world; tests pass in-memory ones. */
export interface AppDeps {
  config: Config;
  kv: Deno.Kv;
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
  /** A layer switched off to measure its cost (`deno task bench` only; see BENCH_LAYERS). */
  benchOff?: BenchLayer;
}

/**
 * The parts of a client API request that `deno task bench` switches off one
 * at a time (APP_BENCH_OFF=<name>, read by main.ts) to report what each one
 * costs. A production setting never sets it: each one breaks a rule.
 */
export const BENCH_LAYERS = {
  access_log: "access log",
  metrics: "request metrics",
  headers: "security and cache headers",
  rate_limit: "rate limit",
  key_check: "key hash, lookup and check",
} as const;

export type BenchLayer = keyof typeof BENCH_LAYERS;

/** The bearer token of a client API request, resolved once by the rate limiter. */
export interface PresentedKey {
  /** The token after `Bearer `, or undefined when there is none. */
  token: string | undefined;
  /** The stored key the token belongs to, or null. */
  key: ApiKey | null;
  /** True when the key could not be looked up because KV failed. */
  lookupFailed: boolean;
}

export interface AppEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    /** Set by the observing middleware (src/http/observe.ts), so nothing observes a request twice. */
    observed?: boolean;
    presentedKey: PresentedKey;
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
