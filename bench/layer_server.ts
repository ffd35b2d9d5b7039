/**
 * The service with one part of a client API request replaced by a no-op, for
 * the `layers` scenario (bench/scenarios_layers.ts): the app main.ts builds,
 * on the same settings (`APP_*`), with that one part passed in. Production
 * code has no switch for this; each variant is built here from outside.
 *
 * deno run -A bench/layer_server.ts <layer>   (a name of BENCH_LAYERS, or "none")
 */
import { createApp } from "../app.ts";
import type { AppDeps } from "../src/http/app_env.ts";
import { withDefaultParts } from "../src/http/app_parts.ts";
import { loadConfig } from "../src/lib/config.ts";
import { createBufferedWriter, createLogger } from "../src/lib/log.ts";
import { noMetrics } from "../src/lib/metrics.ts";
import { openArtifactStore } from "../src/storage/mod.ts";
import { followOtherWriters } from "../src/kv/cache.ts";
import type { KeyLookup } from "../src/credentials/key_lookup.ts";
import type { ApiKey } from "../src/credentials/types.ts";
import { createKeyUsageRecorder } from "../src/credentials/key_usage.ts";
import { BENCH_LAYERS, type BenchLayer } from "./layers.ts";
import { createStore } from "../src/kv/store.ts";

const layer = Deno.args[0];
if (layer !== "none" && !Object.hasOwn(BENCH_LAYERS, layer)) {
  console.error(`usage: layer_server.ts <${Object.keys(BENCH_LAYERS).join("|")}|none>`);
  Deno.exit(2);
}

const config = loadConfig();
const kv = await Deno.openKv(config.kvPath);
const store = createStore(kv);
followOtherWriters(store, config.cacheRefreshMs);
const deps: AppDeps = {
  config,
  store,
  artifacts: await openArtifactStore(config),
  recordKeyUse: createKeyUsageRecorder(store),
  logger: createLogger(config.logFormat, createBufferedWriter().write),
};
const app = createApp(layer === "none" ? deps : withoutLayer(deps, layer as BenchLayer));

Deno.serve({
  hostname: config.host,
  port: config.port,
  onListen: ({ hostname, port }) => console.log(`listening on http://${hostname}:${port}`),
}, app.fetch);

/** `deps` with the part of `layer` replaced by one that does nothing. */
function withoutLayer(deps: AppDeps, layer: BenchLayer): AppDeps {
  switch (layer) {
    case "access_log":
      return { ...deps, logger: undefined };
    case "metrics":
      return { ...deps, metrics: noMetrics() };
    case "headers":
      return { ...deps, responseHeaders: { security: [], protected: [] } };
    case "rate_limit":
      return {
        ...deps,
        rateLimiter: { take: () => ({ allowed: true }), peek: () => null },
      };
    case "key_check":
      return { ...deps, keyLookup: lastKeyAgain(withDefaultParts(deps).keyLookup) };
  }
}

/** The key of the last token again, without hashing or looking it up (one key in the bench). */
function lastKeyAgain(lookup: KeyLookup): KeyLookup {
  let last: { token: string; key: ApiKey | null } | undefined;
  return {
    find(token, beforeRead) {
      if (last?.token === token) return last.key;
      const found = lookup.find(token, beforeRead);
      return Promise.resolve(found).then((key) => (last = { token, key }).key);
    },
  };
}
