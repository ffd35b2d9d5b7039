/** `GET /healthz` (../shared/spec/client-api.md "GET /healthz"): whether the service and its KV answer. */
import type { Handler } from "hono";
import { pingKv } from "../store/health.ts";
import type { AppEnv, ServiceDeps } from "./app_env.ts";
import { jsonResponse } from "./json.ts";

export function healthHandler(deps: ServiceDeps): Handler<AppEnv> {
  const { config, kv, metrics } = deps;
  return async () => {
    const timestamp = new Date().toISOString();
    if (await pingKv(kv)) {
      return jsonResponse({ database: "ok", service: config.serviceName, status: "ok", timestamp });
    }
    metrics.recordKvError("health");
    return jsonResponse({
      database: "unavailable",
      error: "database ping failed",
      service: config.serviceName,
      status: "degraded",
      timestamp,
    }, 503);
  };
}
