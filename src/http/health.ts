/** `GET /healthz` (../shared/spec/client-api.md "GET /healthz"): whether the service and its KV answer. */
import type { Handler } from "hono";
import { storageHealth } from "../storage/mod.ts";
import { pingKv, probeKvWrite } from "../store/health.ts";
import type { AppEnv, ServiceDeps } from "./app_env.ts";
import { jsonResponse } from "./json.ts";

/** How long a write probe's answer stands (a health check every second writes at most this often). */
const WRITE_PROBE_EVERY_MS = 5_000;

export function healthHandler(deps: ServiceDeps): Handler<AppEnv> {
  const { config, kv, metrics } = deps;
  let probed: { at: number; writes: Promise<"ok" | "refused"> } | undefined;
  /** Whether the KV takes writes: a probe at most every WRITE_PROBE_EVERY_MS. */
  const writes = () => {
    const now = Date.now();
    if (probed === undefined || now - probed.at >= WRITE_PROBE_EVERY_MS) {
      probed = { at: now, writes: probeKvWrite(kv) };
    }
    return probed.writes;
  };
  return async () => {
    const timestamp = new Date().toISOString();
    // `storage` and `database_writes` are informative: status and the HTTP code follow the
    // database's answer to a read only (the contract's rules 1 and 2).
    const [kvAnswers, storage] = await Promise.all([
      pingKv(kv),
      storageHealth(deps.artifacts),
    ]);
    if (kvAnswers) {
      const databaseWrites = await writes();
      if (databaseWrites === "refused") metrics.recordKvError("health");
      return jsonResponse({
        database: "ok",
        database_writes: databaseWrites,
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
