import type { Config } from "./config.ts";
import type { ApiKey } from "./store/mod.ts";

/** What the HTTP layers need from the outside world; tests pass in-memory ones. */
export interface AppDeps {
  config: Config;
  kv: Deno.Kv;
  /** Where token buckets live: a private in-memory KV, or `kv` itself. */
  rateLimitKv: Deno.Kv;
  recordKeyUse: (keyId: number) => void;
}

export interface AppEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: { apiKey: ApiKey };
}
