/**
 * The whole HTTP application, composed: request observation, the client API
 * under /api/v1, the updater feeds under /feeds, health and metrics, and the admin UI under /admin. Each
 * surface maps its own errors (the API to JSON, the admin UI to pages); this
 * file only says which surface answers which path.
 */
import { type Context, Hono } from "hono";
import { secureHeaders } from "hono/secure-headers";
import { createAdminRoutes } from "./admin/mod.ts";
import { SSO_CALLBACK_PATH } from "./admin/routes/sso.tsx";
import { createSso, type SsoService } from "./src/sso/mod.ts";
import { createPublishApi } from "./src/publishing/api/mod.ts";
import { createFeedRoutes } from "./src/client_api/feeds.ts";
import { FEEDS_PREFIX } from "./src/feeds/paths.ts";
import { createApiRoutes } from "./src/client_api/routes.ts";
import { createReportRoutes, REPORTS_PREFIX } from "./src/client_api/reports.ts";
import { createTufRoutes } from "./src/client_api/tuf.ts";
import { TUF_PREFIX } from "./src/tuf/paths.ts";
import { keySetHandler, keySetRootHandler } from "./src/client_api/key_set.ts";
import { KEY_SET_PATH, KEY_SET_ROOT_PATH } from "./src/signing/format.ts";
import { createSigner } from "./src/signing/signer.ts";
import type { AppDeps, AppEnv } from "./src/http/app_env.ts";
import { withDefaultParts } from "./src/http/app_parts.ts";
import { mapJsonError } from "./src/http/errors.ts";
import {
  createHealthChecks,
  type HealthChecks,
  healthDetailsHandler,
  healthHandler,
} from "./src/http/health.ts";
import { jsonResponse } from "./src/http/json.ts";
import { HEALTH_DETAILS_PATH, metricsHandler } from "./src/http/metrics_route.ts";
import { createObserver } from "./src/http/observe.ts";
import { API_ERRORS } from "./src/http/errors.ts";

export type { AppDeps, AppEnv } from "./src/http/app_env.ts";

/** Where each surface is mounted. */
const API_PREFIX = "/api/v1";
const ADMIN_PREFIX = "/admin";
/**
 * The publishing API (docs/publishing.md): token-authenticated JSON, outside /admin so that the
 * admin contract's rule holds for every path under /admin (a GET without a session answers 303).
 */
const PUBLISH_PREFIX = "/publish/v1";

export function createApp(
  appDeps: AppDeps & { sso?: SsoService; health?: HealthChecks },
): Hono<AppEnv> {
  const deps = withDefaultParts({
    ...appDeps,
    signer: appDeps.signer ?? createSigner({
      store: appDeps.store,
      dataDir: appDeps.config.dataDir,
      ttlSeconds: appDeps.config.signingTtlSeconds,
      enabled: appDeps.config.signing,
    }),
  });
  const { config } = deps;
  // Sign-in through an OpenID Connect provider (docs/sso.md) is the admin UI's.
  const sso = appDeps.sso ?? createSsoService(deps);
  const app = new Hono<AppEnv>();

  // Outermost: request metrics, the access log, and the spec's security
  // headers on every response that was not built with them (client API
  // responses are; see src/http/response_headers.ts). A middleware on every
  // route outside the key-protected surfaces (client API, feeds, TUF); their
  // handlers and the not-found handler are wrapped instead
  // (`observer.endpoint`, the same code), which saves the hot path a
  // middleware frame.
  // tests/access_log_test.ts checks every route.
  const observer = createObserver(deps);
  for (const path of OBSERVED_PATHS) app.use(path, observer.middleware);
  // Admin pages (HTML) get Hono's document headers too.
  app.use(
    `${ADMIN_PREFIX}/*`,
    secureHeaders({
      xFrameOptions: "DENY",
      referrerPolicy: "no-referrer",
      xContentTypeOptions: "nosniff",
      strictTransportSecurity: config.https ? "max-age=31536000" : false,
    }),
  );

  // The service's checks come from main.ts, shared with its metrics scrape and listener.
  const health = appDeps.health ?? createHealthChecks({
    ...deps,
    kv: deps.store.kv,
    serviceName: config.serviceName,
  });
  app.get("/healthz", healthHandler(health));
  // The signing keys' public halves (docs/signing.md "The key set").
  app.get(KEY_SET_PATH, keySetHandler(deps));
  app.get(KEY_SET_ROOT_PATH, keySetRootHandler(deps));
  // With a separate metrics address, /metrics and the health details are served only there
  // (see main.ts).
  if (config.metricsToken !== undefined && config.metricsAddress === undefined) {
    app.get("/metrics", metricsHandler(deps.metrics, config.metricsToken));
    app.get(HEALTH_DETAILS_PATH, healthDetailsHandler(health, config.metricsToken));
  }

  const clientApi = createApiRoutes(deps, observer);
  const adminUi = createAdminRoutes({ ...deps, sso });
  app.route(API_PREFIX, clientApi.routes);
  const feeds = createFeedRoutes(deps, observer);
  app.route(FEEDS_PREFIX, feeds.routes);
  // Install reports (docs/reports.md): outside /api/v1, which stays read-only.
  const reports = createReportRoutes(deps, observer);
  app.route(REPORTS_PREFIX, reports.routes);
  // Each project's TUF repository (docs/tuf.md), behind the same key checks as the feeds.
  const tuf = createTufRoutes(deps, observer);
  app.route(TUF_PREFIX, tuf.routes);
  app.route(PUBLISH_PREFIX, createPublishApi(deps));
  app.route(ADMIN_PREFIX, adminUi.routes);
  app.get("/", (c) => c.redirect(ADMIN_PREFIX, 303));

  // Errors outside both surfaces (health, metrics, the redirect) are JSON.
  app.onError(mapJsonError);
  // A path no route knows. The admin UI answers its own (its last route, admin/mod.ts). The
  // key-protected surfaces (client API, feeds, TUF) cannot: a catch-all route of theirs would
  // match every one of their requests, so Hono would compose two handlers for each (see
  // docs/benchmarks.md "The client API's hot path"). Hono does not take a mounted app's
  // not-found handler, so theirs are called here by their prefix.
  const otherNotFound = observer.endpoint(
    () => jsonResponse({ error: API_ERRORS.resourceNotFound }, 404),
    mapJsonError,
  );
  app.notFound((c) => {
    if (isUnder(c, API_PREFIX)) return clientApi.notFound(c);
    if (isUnder(c, FEEDS_PREFIX)) return feeds.notFound(c);
    if (isUnder(c, REPORTS_PREFIX)) return reports.notFound(c);
    if (isUnder(c, TUF_PREFIX)) return tuf.notFound(c);
    return otherNotFound(c, async () => {}) as Response | Promise<Response>;
  });

  return app;
}

/**
 * Sign-in through an OpenID Connect provider (docs/sso.md), when one is set up: its callback is
 * the admin UI's.
 */
export function createSsoService(
  { config, store }: Pick<AppDeps, "config" | "store">,
): SsoService | undefined {
  if (config.oidc === undefined) return undefined;
  return createSso({
    store,
    settings: config.oidc,
    redirectUri: `${config.baseUrl}${ADMIN_PREFIX}${SSO_CALLBACK_PATH}`,
  });
}

function isUnder(c: Context, prefix: string): boolean {
  const path = c.req.path;
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** The paths whose routes the observing middleware runs on: all but the client API's. */
const OBSERVED_PATHS = [
  "/",
  "/healthz",
  KEY_SET_PATH,
  KEY_SET_ROOT_PATH,
  "/metrics",
  HEALTH_DETAILS_PATH,
  `${ADMIN_PREFIX}/*`,
  `${PUBLISH_PREFIX}/*`,
] as const;
