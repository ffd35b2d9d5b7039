/**
 * The admin routes the app registered (its own list, not a hand-written one), with their
 * parameters filled in, and a snapshot of the state they must not change; shared by
 * admin_gates_test.ts and admin_roles_test.ts.
 */
import type { TestApp } from "./helpers.ts";
import { listArtifactFiles } from "./admin_helpers.ts";

export interface AdminRoute {
  method: string;
  /** The registered pattern, e.g. `/admin/projects/:slug`. */
  pattern: string;
  /** The pattern with its parameters filled with seeded records. */
  path: string;
}

/** The seeded records the routes' parameters take. */
export interface AdminRouteIds {
  releaseId: number;
  keyId: number;
  tokenId: number;
  /** The account that `:username` names. */
  username: string;
}

/** Where the publishing API's routes (gated by a publish token, not a session) start. */
export const TOKEN_GATED_PREFIX = "/publish/v1/";

/** Every `/admin` and publishing API route the app registered, minus middleware. */
export function adminRoutes(t: TestApp, ids: AdminRouteIds): AdminRoute[] {
  const seen = new Map<string, AdminRoute>();
  for (const { method, path: pattern } of t.app.routes) {
    const admin = pattern === "/admin" || pattern.startsWith("/admin/") ||
      pattern.startsWith(TOKEN_GATED_PREFIX);
    if (method === "ALL" || !admin) continue;
    const path = pattern.replace(/:(\w+)/g, (_, name: string) => {
      if (name === "slug") return "alpha";
      if (name === "kid") return "k0000000000000000";
      if (name === "id" && pattern.includes("/webhooks/")) return "000000000aaaaaaaaaaaa";
      if (name === "delivery") return "000000000bbbbbbbbbbbb";
      if (name === "id" && pattern.includes("/publish-tokens/")) return String(ids.tokenId);
      if (name === "id") return String(pattern.includes("/api-keys/") ? ids.keyId : ids.releaseId);
      if (name === "name") return "style.css";
      if (name === "username") return ids.username;
      throw new Error(`no test value for :${name} in ${pattern}`);
    });
    seen.set(`${method} ${pattern}`, { method, pattern, path });
  }
  return [...seen.values()];
}

/** All durable state (KV and artifact files) but the KV roots starting with one of `skipped`. */
export async function stateSnapshot(t: TestApp, skipped: string[]): Promise<string> {
  const rows: unknown[] = [];
  for await (const entry of t.kv.list({ prefix: [] })) {
    const root = String(entry.key[0]);
    if (skipped.some((prefix) => root.startsWith(prefix))) continue;
    rows.push([entry.key, entry.value]);
  }
  return JSON.stringify(
    [rows, await listArtifactFiles(t)],
    (_, v) => typeof v === "bigint" ? String(v) : v,
  );
}
