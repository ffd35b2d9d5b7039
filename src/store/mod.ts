/** The store layer: the only code that touches Deno KV. */
export * from "./api_keys.ts";
export * from "./backup.ts";
export * from "./errors.ts";
export * from "./keys.ts";
export * from "./projects.ts";
export * from "./releases.ts";
export * from "./types.ts";
export * from "./validate.ts";
export { commitWithRetry } from "./atomic.ts";
