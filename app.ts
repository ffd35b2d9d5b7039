/** The whole HTTP application: middleware, the client API, health, and the admin UI. */
import { Hono } from "hono";
import {
  createAdminRoutes,
  isAdminPath,
  renderAdminError,
  renderAdminNotFound,
} from "./admin/mod.ts";
import { HTTPException } from "hono/http-exception";
import { secureHeaders } from "hono/secure-headers";
import { createApiRoutes } from "./src/api/routes.ts";
import type { AppDeps, AppEnv } from "./src/http/app_env.ts";
import { pingKv } from "./src/store/health.ts";
import { API_ERRORS, ApiError, isClientGone } from "./src/http/errors.ts";
import { jsonResponse } from "./src/http/json.ts";
import { metricsHandler } from "./src/http/metrics_route.ts";
import { observeRequests } from "./src/http/observe.ts";
import { recordKvError } from "./src/lib/metrics.ts";

export type { AppDeps, AppEnv } from "./src/http/app_env.ts";

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const { config } = deps;
  const app = new Hono<AppEnv>();

  app.use(observeRequests(deps));
  // The spec's security headers on every response. Admin pages (HTML) also get
  // Hono's other defaults; JSON and file responses skip those that only mean
  // something to a browser rendering a document (COOP, Origin-Agent-Cluster,
  // X-DNS-Prefetch-Control, X-Download-Options, X-Permitted-Cross-Domain-Policies,
  // X-XSS-Protection): each header costs the hot path about half a microsecond.
  const spec = {
    xFrameOptions: "DENY",
    referrerPolicy: "no-referrer",
    xContentTypeOptions: "nosniff",
    strictTransportSecurity: config.https ? "max-age=31536000" : false,
  } as const;
  const pageHeaders = secureHeaders(spec);
  const apiHeaders = secureHeaders({
    ...spec,
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
  });
  if (deps.benchOff !== "headers") {
    app.use((c, next) => isAdminPath(c.req.path) ? pageHeaders(c, next) : apiHeaders(c, next));
  }

  app.get("/healthz", async () => {
    const timestamp = new Date().toISOString();
    if (await pingKv(deps.kv)) {
      return jsonResponse({ database: "ok", service: config.serviceName, status: "ok", timestamp });
    }
    recordKvError("health");
    return jsonResponse({
      database: "unavailable",
      error: "database ping failed",
      service: config.serviceName,
      status: "degraded",
      timestamp,
    }, 503);
  });

  // With a separate metrics address, /metrics is served only there (see main.ts).
  if (config.metricsToken !== undefined && config.metricsAddress === undefined) {
    app.get("/metrics", metricsHandler(config.metricsToken));
  }

  app.route("/api/v1", createApiRoutes(deps));
  app.route("/admin", createAdminRoutes(deps));
  app.get("/", (c) => c.redirect("/admin", 303));

  app.notFound((c) => {
    if (isAdminPath(c.req.path)) return renderAdminNotFound(c, deps);
    return jsonResponse({ error: API_ERRORS.resourceNotFound }, 404);
  });

  // Errors are mapped once: HTML pages under /admin, JSON everywhere else.
  app.onError((error, c) => {
    if (isAdminPath(c.req.path)) return renderAdminError(c, deps, error);
    if (error instanceof ApiError) {
      return jsonResponse({ error: error.message }, error.status, error.headers);
    }
    if (error instanceof HTTPException && error.status < 500) {
      return jsonResponse({ error: error.message || "bad request" }, error.status);
    }
    if (isClientGone(error)) return jsonResponse({ error: "request cut off" }, 400);
    console.error("internal error:", error);
    return jsonResponse({ error: API_ERRORS.internal }, 500);
  });

  return app;
}
