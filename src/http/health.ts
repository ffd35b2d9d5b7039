/** `GET /healthz` (../shared/spec/client-api.md "GET /healthz"): whether the service and its KV answer. */
import type { Handler } from "hono";
import { storageHealth } from "../storage/mod.ts";
import { pingKv } from "../store/health.ts";
import type { AppEnv, ServiceDeps } from "./app_env.ts";
import { jsonResponse } from "./json.ts";

export function healthHandler(deps: ServiceDeps): Handler<AppEnv> {
  const { config, kv, metrics } = deps;
  return async () => {
    const timestamp = new Date().toISOString();
    // `storage` is informative: status and the HTTP code follow the database only (the contract).
    const [kvAnswers, storage] = await Promise.all([
      pingKv(kv),
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
    metrics.recordKvError("health");
    return jsonResponse({
      database: "unavailable",
      error: "database ping failed",
      service: config.serviceName,
      status: "degraded",
      storage,
      timestamp,
    }, 503);
  };
}
