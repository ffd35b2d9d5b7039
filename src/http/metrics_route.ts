/**
 * `GET /metrics` (Prometheus text format) and, beside it, `GET /healthz/details`
 * (src/http/health.ts). Served on the main listener only with `APP_METRICS_TOKEN`
 * set (bearer token required), or on the separate `APP_METRICS_ADDRESS` listener
 * (token required there too when set).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Hono } from "hono";
import type { Config } from "../lib/config.ts";
import type { Metrics } from "../lib/metrics.ts";
import { jsonResponse } from "./json.ts";

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

/** Compares digests, so neither the content nor the length of the token leaks through timing. */
function tokenMatches(given: string, expected: string): boolean {
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * The `401` for a request without the metrics token (`authorization` is its header), or null
 * when the token is given or none is set. `/metrics` and `/healthz/details` ask it.
 */
export function metricsTokenRefusal(
  authorization: string | undefined,
  token: string | undefined,
): Response | null {
  if (token === undefined) return null;
  const given = BEARER.exec(authorization ?? "")?.[1];
  if (given !== undefined && tokenMatches(given, token)) return null;
  return jsonResponse({ error: "missing or invalid metrics token" }, 401, {
    "www-authenticate": 'Bearer realm="metrics"',
    "cache-control": "no-store",
  });
}

export function metricsHandler(metrics: Metrics, token: string | undefined) {
  return async (c: { req: { header(name: string): string | undefined } }): Promise<Response> => {
    const refusal = metricsTokenRefusal(c.req.header("authorization"), token);
    if (refusal !== null) return refusal;
    return new Response(await metrics.render(), {
      headers: { "content-type": metrics.contentType, "cache-control": "no-store" },
    });
  };
}

/**
 * The whole app of the separate metrics listener: `/metrics`, and `/healthz/details` when given
 * the route's handler (src/http/health.ts), and nothing else.
 */
export function createMetricsApp(
  config: Config,
  metrics: Metrics,
  healthDetails?: (c: { req: { header(name: string): string | undefined } }) => Promise<Response>,
): Hono {
  const app = new Hono();
  app.get("/metrics", metricsHandler(metrics, config.metricsToken));
  if (healthDetails !== undefined) app.get(HEALTH_DETAILS_PATH, healthDetails);
  app.notFound(() => jsonResponse({ error: "not found" }, 404));
  return app;
}

/** Where the health details are served: beside `/metrics`, with its token. */
export const HEALTH_DETAILS_PATH = "/healthz/details";

/** Where /metrics is served, for the start-up log line. */
export function metricsAddressLabel(config: Config): string {
  if (config.metricsAddress !== undefined) {
    const { hostname, port } = config.metricsAddress;
    return `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}/metrics`;
  }
  return config.metricsToken !== undefined ? "/metrics (bearer token)" : "off";
}
