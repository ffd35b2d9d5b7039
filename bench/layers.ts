/**
 * The parts of a client API request that the `layers` scenario replaces by a
 * no-op one at a time (bench/layer_server.ts) to report what each one costs.
 */
export const BENCH_LAYERS = {
  access_log: "access log",
  metrics: "request metrics",
  headers: "security and cache headers",
  rate_limit: "rate limit",
  key_check: "key hash, lookup and check",
} as const;

export type BenchLayer = keyof typeof BENCH_LAYERS;
