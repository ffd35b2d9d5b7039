/**
 * The admin web UI under /admin (../shared/spec/admin-contract.md): server-rendered pages
 * with Hono JSX on top of the store layer.
 *
 * Two sub-apps make the protection structural rather than a matter of
 * registration order:
 * - the public one holds what works without a session: the static assets and
 *   the sign-in form (which carries its own pre-session CSRF token);
 * - the protected one starts with `.use(requireSession)`, `.use(requireRole)`
 *   and `.use(requireCsrfToken)`, so every route added to it is behind the
 *   session gate, the account's role (the roles each route allows are in
 *   roles.ts) and every POST behind the CSRF check (the upload forms' check
 *   runs on their stream, registered just before it, see guards.ts
 *   `streamedForm`).
 * In front of both: response headers, "/admin/x/" redirects to "/admin/x", and
 * the browser origin check of unsafe requests.
 * tests/admin_gates_test.ts walks every registered route and proves it.
 */
import { Hono } from "hono";
import { ADMIN_RESPONSE_HEADERS } from "./headers.ts";
import {
  auditChanges,
  originGuard,
  provideStore,
  requireCsrfToken,
  requireRole,
  requireSession,
  requireValidHost,
  trimTrailingSlash,
} from "./guards.ts";
import { addAccountRoutes, addLoginRoutes } from "./routes/auth.tsx";
import { addAccountsRoutes } from "./routes/accounts.tsx";
import { addSsoRoutes, requireSsoCheck } from "./routes/sso.tsx";
import { addApiKeyRoutes } from "./routes/api_keys.tsx";
import { addApiKeyPageRoutes } from "./routes/api_key_page.tsx";
import { addReleasePageRoutes } from "./routes/release_page.tsx";
import { addOverviewRoutes } from "./routes/overview.tsx";
import { addProjectRoutes } from "./routes/projects.tsx";
import { addPublishTokenRoutes } from "./routes/publish_tokens.tsx";
import { addReleaseRoutes } from "./routes/releases.tsx";
import { addReleaseLatestRoutes } from "./routes/release_latest.tsx";
import { addRolloutRoutes } from "./routes/rollout.tsx";
import { addReleaseSafetyRoutes } from "./routes/release_safety.tsx";
import { addUploadRoute, addUploadStreams } from "./routes/upload.tsx";
import { addSigningKeyRoutes } from "./routes/signing_keys.tsx";
import { addTufRoutes } from "./routes/tuf.tsx";
import { addWebhookRoutes } from "./routes/webhooks.tsx";
import { renderAdminError, renderAdminNotFound } from "./errors.tsx";
import { addStaticRoutes } from "./static_route.ts";
import { type AdminEnv, routeDeps, type ServiceDeps } from "./types.ts";
import { createLoginThrottle, type LoginThrottle } from "../src/accounts/login_throttle.ts";

export { bootstrapAdmin, checkBreakGlassAccounts, checkFirstAdminSetting } from "./accounts.ts";

export interface AdminUi {
  /**
   * The routes, to mount at /admin. Their errors become HTML error pages here,
   * and a path no route knows is the 404 page.
   */
  routes: Hono<AdminEnv>;
}

/** Admin headers a route's own value overrides (a download's caching and sandbox). */
const KEPT_WHEN_SET: readonly string[] = ["cache-control", "content-security-policy"];

export function createAdminRoutes(deps: ServiceDeps): AdminUi {
  const admin = new Hono<AdminEnv>();
  // Registered before the routes: Hono wraps each route with its sub-app's
  // error handler when it is mounted, so every admin error is a page.
  admin.onError((error, c) => renderAdminError(c, deps, error));
  admin.use(async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(ADMIN_RESPONSE_HEADERS)) {
      if (KEPT_WHEN_SET.includes(name) && c.res.headers.has(name)) continue;
      c.res.headers.set(name, value);
    }
  });
  admin.use(provideStore(deps), requireValidHost(), trimTrailingSlash());
  admin.use(originGuard(deps));
  // Hono flattens mounted routes in order: the public routes answer before the
  // protected sub-app's gates, which then cover every later /admin path.
  // One sign-in throttle for the sign-in form and the password change.
  const throttle = createLoginThrottle(deps.store);
  admin.route("/", createPublicRoutes(deps, throttle));
  admin.route("/", createProtectedRoutes(deps, throttle));
  // Last: what no route answered, behind the same gates (a GET without a
  // session is sent to sign in).
  admin.all("*", (c) => renderAdminNotFound(c, deps));
  return { routes: admin };
}

/** What works without a session: the static assets and signing in. */
function createPublicRoutes(deps: ServiceDeps, throttle: LoginThrottle): Hono<AdminEnv> {
  const open = new Hono<AdminEnv>();
  addStaticRoutes(open);
  const routes = routeDeps(deps);
  addLoginRoutes(open, routes, throttle);
  addSsoRoutes(open, routes);
  return open;
}

/**
 * Everything else: a session for every route, a role that the route allows, the session's CSRF
 * token for every POST.
 */
function createProtectedRoutes(deps: ServiceDeps, throttle: LoginThrottle): Hono<AdminEnv> {
  const gated = new Hono<AdminEnv>();
  gated.use(requireSession(deps));
  const routes = routeDeps(deps);
  if (routes.sso !== undefined) gated.use(requireSsoCheck(routes));
  gated.use(requireRole(deps));
  gated.use(auditChanges(deps));
  addUploadStreams(gated);
  gated.use(requireCsrfToken());
  addOverviewRoutes(gated, routes);
  addAccountRoutes(gated, routes, throttle);
  addProjectRoutes(gated, routes);
  addUploadRoute(gated, deps);
  addReleaseRoutes(gated, routes);
  addReleaseLatestRoutes(gated, routes);
  addRolloutRoutes(gated, routes);
  addReleaseSafetyRoutes(gated, routes);
  addApiKeyRoutes(gated, routes);
  addReleasePageRoutes(gated, routes);
  addApiKeyPageRoutes(gated, routes);
  addPublishTokenRoutes(gated, routes);
  addAccountsRoutes(gated, routes);
  addSigningKeyRoutes(gated, routes);
  addTufRoutes(gated, routes);
  addWebhookRoutes(gated, routes);
  return gated;
}
