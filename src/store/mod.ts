/** The store layer: the only code that touches Deno KV. */
export * from "./admin_users.ts";
export * from "./api_keys.ts";
export * from "./backup.ts";
export * from "./audit.ts";
export * from "./bulk.ts";
export * from "./errors.ts";
export * from "./keys.ts";
export * from "./login_throttle.ts";
export * from "./projects.ts";
export * from "./releases.ts";
export * from "./sessions.ts";
export * from "./stats.ts";
export * from "./types.ts";
export * from "./validate.ts";
export { commitWithRetry } from "./atomic.ts";
export { type Cached, followOtherWriters, setCacheRefreshMs, thenRead } from "./cache.ts";
export * from "./key_lookup.ts";
