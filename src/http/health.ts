/**
 * Health: `GET /healthz` (../shared/spec/client-api.md "GET /healthz") answers exactly the
 * contract's fields; `GET /healthz/details` (behind the metrics token, docs/operators.md
 * "Health details") adds whether the database takes writes and the artifact storage answers,
 * and `/metrics` shows the same as gauges. Status and code always follow the database's answer
 * to a read (the contract's rules 1 and 2).
 */
import type { Handler } from "hono";
import type { Metrics, ScrapedGauge } from "../lib/metrics.ts";
import { storageHealth } from "../storage/mod.ts";
import type { ArtifactStore } from "../storage/types.ts";
import { pingKv, probeKvWrite } from "../kv/health.ts";
import type { AppEnv } from "./app_env.ts";
import { jsonResponse } from "./json.ts";
import { metricsTokenRefusal } from "./metrics_route.ts";

/** How long a write probe's answer stands (a health check every second writes at most this often). */
const WRITE_PROBE_EVERY_MS = 5_000;

/** What the health answers are made from. */
export interface HealthSources {
  kv: Deno.Kv;
  artifacts: ArtifactStore;
  metrics: Metrics;
  serviceName: string;
  /** More members of the details, each a state word (the TUF signing's `off`, `ok` or `stuck`). */
  moreDetails?: () => Promise<Record<string, string>>;
}

/** A health answer: its JSON body and status code. */
export interface HealthAnswer {
  body: Record<string, string>;
  status: 200 | 503;
}

export interface HealthChecks {
  /** The contract's answer: `database`, `service`, `status`, `timestamp` (+ `error`). */
  answer(): Promise<HealthAnswer>;
  /** The contract's fields plus `database_writes` and `storage`. */
  details(): Promise<HealthAnswer>;
  /** `uds_database_up` and `uds_database_writes_up`, read at every scrape (the storage asked too). */
  gauges(): Promise<ScrapedGauge[]>;
}

export function createHealthChecks(
  { kv, artifacts, metrics, serviceName, moreDetails = () => Promise.resolve({}) }: HealthSources,
) {
  let probed: { at: number; writes: Promise<"ok" | "refused"> } | undefined;
  /** Whether the KV takes writes: a probe at most every WRITE_PROBE_EVERY_MS. */
  const writes = () => {
    const now = Date.now();
    if (probed === undefined || now - probed.at >= WRITE_PROBE_EVERY_MS) {
      const writes = probeKvWrite(kv).then((answer) => {
        if (answer === "refused") metrics.recordKvError("health");
        return answer;
      });
      probed = { at: now, writes };
    }
    return probed.writes;
  };
  const read = async () => {
    const answers = await pingKv(kv);
    if (!answers) metrics.recordKvError("health");
    return answers;
  };
  const contract = (answers: boolean, timestamp: string): HealthAnswer =>
    answers
      ? { body: { database: "ok", service: serviceName, status: "ok", timestamp }, status: 200 }
      : {
        body: {
          database: "unavailable",
          error: "database ping failed",
          service: serviceName,
          status: "degraded",
          timestamp,
        },
        status: 503,
      };
  return {
    answer: async () => contract(await read(), new Date().toISOString()),
    details: async () => {
      const timestamp = new Date().toISOString();
      const [answers, databaseWrites, storage, more] = await Promise.all([
        read(),
        writes(),
        storageHealth(artifacts),
        moreDetails().catch(() => ({})),
      ]);
      const { body, status } = contract(answers, timestamp);
      return {
        body: sortedKeys({ ...more, ...body, database_writes: databaseWrites, storage }),
        status,
      };
    },
    gauges: async () => {
      // The storage is asked too (s3: at most every 5 s), so that uds_storage_up, which the
      // store's calls set, comes back at a scrape once the store answers again.
      const [answers, databaseWrites] = await Promise.all([
        read(),
        writes(),
        storageHealth(artifacts),
      ]);
      return [
        {
          name: "uds_database_up",
          help: "1 while the database answers a read (as /healthz), 0 when it does not.",
          samples: [{ labels: {}, value: answers ? 1 : 0 }],
        },
        {
          name: "uds_database_writes_up",
          help: "1 while the database takes a write (a probe at most every 5 s), 0 when refused.",
          samples: [{ labels: {}, value: databaseWrites === "ok" ? 1 : 0 }],
        },
      ];
    },
  } satisfies HealthChecks;
}

function sortedKeys(body: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(body).sort(([a], [b]) => a.localeCompare(b)));
}

/** `GET /healthz`: public, the contract's fields only. */
export function healthHandler(checks: HealthChecks): Handler<AppEnv> {
  return async () => {
    const { body, status } = await checks.answer();
    return jsonResponse(body, status);
  };
}

/** `GET /healthz/details`: the details, with the metrics token when one is set. */
export function healthDetailsHandler(checks: HealthChecks, token: string | undefined) {
  return async (c: { req: { header(name: string): string | undefined } }): Promise<Response> => {
    const refusal = metricsTokenRefusal(c.req.header("authorization"), token);
    if (refusal !== null) return refusal;
    const { body, status } = await checks.details();
    return jsonResponse(body, status, { "cache-control": "no-store" });
  };
}
