import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import type { ApiKey } from "./store/mod.ts";

/** What the HTTP layers need from the outside world; tests pass in-memory ones. */
export interface AppDeps {
  config: Config;
  kv: Deno.Kv;
  /** Where token buckets live: a private in-memory KV, or `kv` itself. */
  rateLimitKv: Deno.Kv;
  recordKeyUse: (keyId: number) => void;
  /** Access log and service events; absent means no logging (tests). */
  logger?: Logger;
}

export interface AppEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    apiKey: ApiKey;
    /** Id of the presented key once it is found, accepted or not (for the access log). */
    keyId?: number;
    /** Set by the download route: marks the response as an artifact download. */
    releaseId?: number;
  };
}
