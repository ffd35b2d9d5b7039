/**
 * `GET /metrics` (Prometheus text format). Served on the main listener only
 * with `APP_METRICS_TOKEN` set (bearer token required), or on the separate
 * `APP_METRICS_ADDRESS` listener (token required there too when set).
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

export function metricsHandler(metrics: Metrics, token: string | undefined) {
  return async (c: { req: { header(name: string): string | undefined } }): Promise<Response> => {
    if (token !== undefined) {
      const given = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
      if (given === undefined || !tokenMatches(given, token)) {
        return jsonResponse({ error: "missing or invalid metrics token" }, 401, {
          "www-authenticate": 'Bearer realm="metrics"',
          "cache-control": "no-store",
        });
      }
    }
    return new Response(await metrics.render(), {
      headers: { "content-type": metrics.contentType, "cache-control": "no-store" },
    });
  };
}

/** The whole app of the separate metrics listener: `/metrics` and nothing else. */
export function createMetricsApp(config: Config, metrics: Metrics): Hono {
  const app = new Hono();
  app.get("/metrics", metricsHandler(metrics, config.metricsToken));
  app.notFound(() => jsonResponse({ error: "not found" }, 404));
  return app;
}

/** Where /metrics is served, for the start-up log line. */
export function metricsAddressLabel(config: Config): string {
  if (config.metricsAddress !== undefined) {
    const { hostname, port } = config.metricsAddress;
    return `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}/metrics`;
  }
  return config.metricsToken !== undefined ? "/metrics (bearer token)" : "off";
}
