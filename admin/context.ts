/** Helpers every admin route uses: page context, audit records, flash redirects. */
import type { Context } from "hono";
import { addressOf } from "../src/http/client_address.ts";
import { type AuditAction, recordAuditSafely } from "../src/kv/audit.ts";
import { setFlash, takeFlash } from "./cookies.ts";
import type { AdminEnv, Flash, RouteDeps } from "./types.ts";
import type { PageContext } from "./views/layout.tsx";

export type AdminContext = Context<AdminEnv>;

/** What the layout needs: the admin, the CSRF token and a pending flash message. */
export function pageContext(c: AdminContext, deps: RouteDeps): PageContext {
  const session = c.get("session");
  return {
    serviceName: deps.config.serviceName,
    username: session?.username,
    role: c.get("role"),
    csrfToken: session?.csrf_token,
    flash: c.req.method === "GET" ? takeFlash(c, deps.config) : null,
  };
}

/** One admin action, for `audit`. */
export interface AuditedAction {
  action: AuditAction;
  target: string;
  details?: string;
  /** Who did it (default: the signed-in admin). */
  actor?: string;
}

/** Records an admin action. A failed audit write is logged, not shown: the action itself is done. */
export async function audit(
  c: AdminContext,
  deps: RouteDeps,
  { action, target, details = "", actor = c.get("session")?.username ?? "-" }: AuditedAction,
): Promise<void> {
  await recordAuditSafely(
    c.var.store,
    { actor, action, target, details, address: addressOf(c, deps) },
    () => deps.metrics.recordKvError("admin"),
  );
}

/** Where a redirect goes, and the message the next page shows. */
export interface FlashRedirect extends Flash {
  location: string;
}

/** 303 See Other to `location`, with a message for the next page. */
export function redirectWithFlash(
  c: AdminContext,
  deps: RouteDeps,
  { location, kind, text }: FlashRedirect,
): Response {
  setFlash(c, deps.config, { kind, text });
  return c.redirect(location, 303);
}
