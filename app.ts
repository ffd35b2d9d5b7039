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
import type { StatusCode } from "hono/utils/http-status";
import { createApiRoutes } from "./src/api/routes.ts";
import type { AppDeps, AppEnv } from "./src/http/app_env.ts";
import { pingKv } from "./src/store/health.ts";
import { storageHealth } from "./src/storage/mod.ts";
import { API_ERRORS, ApiError, isClientGone } from "./src/http/errors.ts";
import { jsonResponse } from "./src/http/json.ts";
import { metricsHandler } from "./src/http/metrics_route.ts";
import { createObserver, type ErrorMapper } from "./src/http/observe.ts";
import { createApiResponder, isApiPath } from "./src/http/response_headers.ts";
import { recordKvError } from "./src/lib/metrics.ts";

export type { AppDeps, AppEnv } from "./src/http/app_env.ts";

const encoder = new TextEncoder();

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const { config } = deps;
  const app = new Hono<AppEnv>();

  // Outermost: request metrics, the access log, and the spec's security
  // headers on every response that was not built with them (client API
  // responses are; see src/http/response_headers.ts). A middleware on every
  // route outside the client API; the API's handlers and the not-found
  // handler are wrapped instead (`observe.endpoint`), which saves the hot
  // path a middleware frame. tests/access_log_test.ts checks every route.
  const observe = createObserver(deps);
  for (const path of OBSERVED_PATHS) app.use(path, observe.middleware);
  // Admin pages (HTML) get Hono's document headers too.
  const pageHeaders = secureHeaders({
    xFrameOptions: "DENY",
    referrerPolicy: "no-referrer",
    xContentTypeOptions: "nosniff",
    strictTransportSecurity: config.https ? "max-age=31536000" : false,
  });
  if (deps.benchOff !== "headers") app.use("/admin/*", pageHeaders);
  const api = createApiResponder(config, deps.benchOff !== "headers");

  app.get("/healthz", async () => {
    const timestamp = new Date().toISOString();
    // `storage` is informative: status and the HTTP code follow the database only (the contract).
    const [kvAnswers, storage] = await Promise.all([
      pingKv(deps.kv),
      storageHealth(deps.artifacts),
    ]);
    if (kvAnswers) {
      return jsonResponse({
        database: "ok",
        service: config.serviceName,
        status: "ok",
        storage,
        timestamp,
      });
    }
    recordKvError("health");
    return jsonResponse({
      database: "unavailable",
      error: "database ping failed",
      service: config.serviceName,
      status: "degraded",
      storage,
      timestamp,
    }, 503);
  });

  // With a separate metrics address, /metrics is served only there (see main.ts).
  if (config.metricsToken !== undefined && config.metricsAddress === undefined) {
    app.get("/metrics", metricsHandler(config.metricsToken));
  }

  // Errors are mapped once: HTML pages under /admin, JSON everywhere else.
  const mapError: ErrorMapper = (error, c) => {
    if (isAdminPath(c.req.path)) return renderAdminError(c, deps, error);
    // Under /api/v1 with the protected-response headers too.
    const respond = isApiPath(c.req.path)
      ? (data: unknown, status: StatusCode, headers?: Record<string, string>) =>
        api.json(c, encoder.encode(JSON.stringify(data)), status, headers)
      : jsonResponse;
    if (error instanceof ApiError) {
      return respond({ error: error.message }, error.status, error.headers);
    }
    if (error instanceof HTTPException && error.status < 500) {
      return respond({ error: error.message || "bad request" }, error.status);
    }
    if (isClientGone(error)) return jsonResponse({ error: "request cut off" }, 400);
    console.error("internal error:", error);
    return respond({ error: API_ERRORS.internal }, 500);
  };
  app.onError(mapError);

  const clientApi = createApiRoutes(
    deps,
    api,
    (handler) => observe.endpoint(handler, mapError, true),
  );
  app.route("/api/v1", clientApi.routes);
  app.route("/admin", createAdminRoutes(deps));
  app.get("/", (c) => c.redirect("/admin", 303));

  const notFound = observe.endpoint((c, next) => {
    if (isApiPath(c.req.path)) return clientApi.notFound(c, next);
    if (isAdminPath(c.req.path)) return renderAdminNotFound(c, deps);
    return jsonResponse({ error: API_ERRORS.resourceNotFound }, 404);
  }, mapError);
  app.notFound((c) => notFound(c, async () => {}) as Response | Promise<Response>);

  return app;
}

/** The paths whose routes the observing middleware runs on: all but the client API's. */
const OBSERVED_PATHS = ["/", "/healthz", "/metrics", "/admin/*"] as const;
