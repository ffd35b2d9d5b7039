/**
 * Middleware in front of admin routes: the browser origin check, the session
 * gate, the account's role and the CSRF token check of every POST.
 */
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { matchedRoutes } from "hono/route";
import { addressOf } from "../src/http/client_address.ts";
import { sameSitePath } from "../src/http/location.ts";
import { constantTimeEqual } from "../src/lib/secrets.ts";
import { getAdminUser, roleOf } from "../src/accounts/admin_users.ts";
import {
  deleteAdminSession,
  getAdminSession,
  type SessionPolicy,
} from "../src/accounts/sessions.ts";
import { auditedStore } from "../src/kv/audit.ts";
import { refusalFor, rolesFor } from "./roles.ts";
import { clearSessionCookie, getSessionCookie } from "./cookies.ts";
import { readForm } from "./forms.ts";
import { multipartBoundary, type MultipartPart, readMultipart } from "../src/http/multipart.ts";
import type { AdminEnv, RouteDeps, ServiceDeps } from "./types.ts";

/** Largest urlencoded (or buffered multipart) form. */
const FORM_LIMIT_BYTES = 1024 * 1024;
const CSRF_TOKEN_MAX_BYTES = 1024;

export function sessionPolicy(deps: RouteDeps): SessionPolicy {
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
export function originGuard(deps: ServiceDeps): MiddlewareHandler {
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
export function requireSession(deps: ServiceDeps): MiddlewareHandler<AdminEnv> {
  const policy = sessionPolicy(deps);
  return async (c, next) => {
    const id = getSessionCookie(c);
    const session = await getAdminSession(deps.store, id, { policy });
    if (session === null || id === undefined) {
      if (id !== undefined) clearSessionCookie(c, deps.config);
      return c.redirect("/admin/login", 303);
    }
    c.set("session", session);
    c.set("sessionId", id);
    await next();
  };
}

/**
 * The account's role, read from its account on every request (a changed role takes effect at
 * once; a removed account's sessions end), checked against the route's allowed roles
 * (roles.ts). A refusal is the error page with 403, before the body is read.
 */
export function requireRole(deps: ServiceDeps): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const session = c.get("session");
    const user = await getAdminUser(deps.store, session.username);
    if (user === null) {
      await deleteAdminSession(deps.store, c.get("sessionId"), session.username);
      clearSessionCookie(c, deps.config);
      return c.redirect("/admin/login", 303);
    }
    const role = roleOf(user);
    c.set("role", role);
    const route = routeOf(c);
    if (route !== null && !rolesFor(route).includes(role)) {
      throw new HTTPException(403, { message: refusalFor(role) });
    }
    await next();
  };
}

/** The matched route as registered (`METHOD /admin/path/:param`), or null when none matched. */
function routeOf(c: Context): string | null {
  const routes = matchedRoutes(c).filter((route) => route.method !== "ALL");
  const route = routes.at(-1);
  return route === undefined ? null : `${route.method} ${route.path}`;
}

export function tokenMatches(expected: string, given: string | undefined | null): boolean {
  return typeof given === "string" && given !== "" && constantTimeEqual(expected, given);
}

/**
 * The CSRF check of a form that is read as a stream: a multipart POST is not
 * buffered; the handler gets its parts as `c.get("parts")`, a stream that
 * fails with a CsrfError as soon as a wrong token arrives, and at its end when
 * none came. Such a handler stores nothing durable before the stream is done
 * (and removes what it wrote on an error). Registered on its routes before
 * `requireCsrfToken`, which then leaves the body to it; any other body goes on
 * to `requireCsrfToken`.
 */
export const streamedForm: MiddlewareHandler<AdminEnv> = async (c, next) => {
  const boundary = multipartBoundary(c.req.header("content-type"));
  const body = c.req.raw.body;
  if (c.req.method === "POST" && boundary !== null && body !== null) {
    const expected = c.get("session").csrf_token;
    c.set("parts", tokenCheckedParts(readMultipart(body, boundary), expected));
  }
  await next();
};

/**
 * The CSRF check of every POST, before any handler runs. A form is read (at
 * most 1 MiB) and its `csrf_token` compared with the session's; the handler
 * gets the fields as `c.get("form")`. A body that `streamedForm` took as a
 * stream is left to it.
 */
export function requireCsrfToken(): MiddlewareHandler<AdminEnv> {
  const limit = bodyLimit({
    maxSize: FORM_LIMIT_BYTES,
    onError: () => {
      throw new HTTPException(413, { message: "The form is too large." });
    },
  });
  return async (c, next) => {
    if (c.req.method !== "POST" || c.get("parts") !== undefined) return await next();
    const expected = c.get("session").csrf_token;
    return await limit(c, async () => {
      const form = await readForm(c);
      if (!tokenMatches(expected, form["csrf_token"]?.[0])) throw new CsrfError();
      c.set("form", form);
      await next();
    });
  };
}

/** `parts` without the `csrf_token` parts, each checked against `expected`; one must come. */
async function* tokenCheckedParts(
  parts: AsyncIterable<MultipartPart>,
  expected: string,
): AsyncGenerator<MultipartPart> {
  let checked = false;
  for await (const part of parts) {
    if (part.name !== "csrf_token") {
      yield part;
      continue;
    }
    if (!tokenMatches(expected, await part.text(CSRF_TOKEN_MAX_BYTES))) throw new CsrfError();
    checked = true;
  }
  if (!checked) throw new CsrfError();
}

/**
 * Refuses a request whose URL cannot be parsed (an unparseable `Host` header
 * such as `%zz`) with 400, before any middleware tries to parse it.
 */
export function requireValidHost(): MiddlewareHandler {
  return async (c, next) => {
    if (!URL.canParse(c.req.url)) {
      throw new HTTPException(400, { message: "The request's Host header is not a valid host." });
    }
    await next();
  };
}

/**
 * Redirects GET and HEAD of `/admin/x/` to `/admin/x` (301) with a relative
 * `Location`: the Host header is never copied into it (Hono's
 * trimTrailingSlash builds an absolute URL from the Host header), and never
 * one that starts with `//`: `/admin/..//evil.example/` normalises to
 * `//evil.example/` (see src/http/location.ts).
 */
export function trimTrailingSlash(): MiddlewareHandler {
  return async (c, next) => {
    const { method, path } = c.req;
    if ((method === "GET" || method === "HEAD") && path.length > 1 && path.endsWith("/")) {
      const url = new URL(c.req.url);
      return c.redirect(sameSitePath(url.pathname.replace(/\/+$/, "")) + url.search, 301);
    }
    await next();
  };
}

/** Every admin request reads and writes through the service's store (`c.var.store`). */
export function provideStore(deps: ServiceDeps): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    c.set("store", deps.store);
    await next();
  };
}

/**
 * Every POST of a signed-in admin writes through a store of its request: the
 * changes it commits carry their first audit entry in the same commit
 * (src/kv/audit.ts `auditedStore`), completed by the route's own `audit` call.
 */
export function auditChanges(deps: ServiceDeps): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    if (c.req.method !== "POST") return await next();
    const request = {
      actor: c.get("session").username,
      address: addressOf(c, deps),
      what: `POST ${c.req.path}`,
    };
    c.set("store", auditedStore(deps.store, request));
    await next();
  };
}
