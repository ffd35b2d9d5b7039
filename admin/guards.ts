/**
 * Middleware in front of admin routes: the browser origin check, the session
 * gate and the CSRF token check of every POST.
 */
import type { Context, MiddlewareHandler } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { clientAddress } from "../src/http/client_address.ts";
import { constantTimeEqual } from "../src/lib/secrets.ts";
import { getAdminSession, type SessionPolicy } from "../src/store/mod.ts";
import { clearSessionCookie, getSessionCookie } from "./cookies.ts";
import { readForm } from "./forms.ts";
import type { AdminEnv, AppDeps } from "./types.ts";

export function sessionPolicy(deps: AppDeps): SessionPolicy {
  return {
    idleMs: deps.config.adminSessionIdleMinutes * 60_000,
    maxMs: deps.config.adminSessionMaxHours * 3_600_000,
  };
}

/** A POST whose CSRF token is missing or wrong; answered with 403. */
export class CsrfError extends HTTPException {
  constructor() {
    super(403, {
      message: "The form was sent without a valid security token. Reload the page and try again.",
    });
    this.name = "CsrfError";
  }
}

/**
 * Refuses unsafe requests that a browser marks as coming from another site.
 * Browsers send `Sec-Fetch-Site` (and `Origin`, which is `null` on same-origin
 * posts under `Referrer-Policy: no-referrer`); Hono's csrf accepts either a
 * `same-origin` Sec-Fetch-Site or an Origin of this service. Requests with
 * neither header are not from a browser that could be tricked into sending
 * them, and rely on the CSRF token alone.
 */
export function originGuard(deps: AppDeps): MiddlewareHandler {
  const baseOrigin = new URL(deps.config.baseUrl).origin;
  const check = csrf({
    origin: (origin, c) => origin === baseOrigin || origin === new URL(c.req.url).origin,
    secFetchSite: "same-origin",
  });
  return async (c, next) => {
    if (c.req.header("sec-fetch-site") === undefined && c.req.header("origin") === undefined) {
      return await next();
    }
    try {
      return await check(c, next);
    } catch (error) {
      if (error instanceof HTTPException && error.status === 403) {
        throw new HTTPException(403, {
          message: "The request came from another site and was refused.",
        });
      }
      throw error;
    }
  };
}

/** Loads the session; without one, answers 303 to the sign-in page (GET and POST alike). */
export function requireSession(deps: AppDeps): MiddlewareHandler<AdminEnv> {
  const policy = sessionPolicy(deps);
  return async (c, next) => {
    const id = getSessionCookie(c);
    const session = await getAdminSession(deps.kv, id, policy);
    if (session === null || id === undefined) {
      if (id !== undefined) clearSessionCookie(c, deps.config);
      return c.redirect("/admin/login", 303);
    }
    c.set("session", session);
    c.set("sessionId", id);
    await next();
  };
}

export function tokenMatches(expected: string, given: string | undefined | null): boolean {
  return typeof given === "string" && given !== "" && constantTimeEqual(expected, given);
}

/** Reads the posted form and checks its `csrf_token` against the session before anything else. */
export function requireCsrfToken(): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const form = await readForm(c);
    if (!tokenMatches(c.get("session").csrf_token, form["csrf_token"]?.[0])) throw new CsrfError();
    c.set("form", form);
    await next();
  };
}

export function addressOf(c: Context, deps: AppDeps): string {
  return clientAddress(c, deps.config.trustProxy);
}
