/**
 * Freshness of the TUF repositories (docs/tuf.md "Freshness"): every few
 * minutes one instance at a time (the lease `tuf_refresh`) refreshes every
 * active project's metadata, so the timestamp and snapshot are signed again
 * before they expire even when no client asks; and what the health details,
 * /metrics and the admin Signing keys page show when that stalls.
 */
import type { ScrapedGauge } from "../lib/metrics.ts";
import { claimLease, releaseLease } from "../kv/leases.ts";
import { listProjects } from "../projects/projects.ts";
import {
  getLatestTufRoot,
  getTufRefreshStatus,
  listTufStates,
  saveTufRefreshStatus,
  type TufRefreshStatus,
} from "./records.ts";
import { type OnlineKeys, refreshRepository, TUF_LIFETIMES_MS } from "./repository.ts";
import type { Store } from "../kv/store.ts";

/** How often an instance tries to run the refresh. */
export const TUF_REFRESH_EVERY_MS = 5 * 60_000;
const LEASE_MS = 5 * 60_000;

/**
 * Signing is stuck for a project when its timestamp has less than a quarter
 * of its life left: it is signed again at half, so that is hours of failed
 * refreshes, and still hours before clients refuse it.
 */
const STUCK_BELOW_MS = TUF_LIFETIMES_MS.timestamp / 4;

/** Refreshes every active project once, unless another instance holds the lease (then null). */
export async function refreshAllRepositories(
  store: Store,
  options: { online: OnlineKeys; holder: string; nowMs?: number },
): Promise<TufRefreshStatus | null> {
  if (await getLatestTufRoot(store) === null) return null;
  const { holder } = options;
  if (!await claimLease(store, "tuf_refresh", { holder, ttlMs: LEASE_MS })) return null;
  const failures: TufRefreshStatus["failures"] = [];
  try {
    for (const project of await listProjects(store)) {
      if (project.state !== "active") continue;
      try {
        await refreshRepository(store, { project, online: options.online, nowMs: options.nowMs });
      } catch (error) {
        failures.push({ project: project.slug, error: (error as Error).message ?? String(error) });
      }
    }
    const status = { ran_at: new Date(options.nowMs ?? Date.now()).toISOString(), failures };
    await saveTufRefreshStatus(store, status);
    return status;
  } finally {
    await releaseLease(store, "tuf_refresh", { holder });
  }
}

/** Runs the refresh now and then every `everyMs`; returns a stop function. */
export function scheduleTufRefresh(
  store: Store,
  options: {
    online: OnlineKeys;
    everyMs?: number;
    report: (level: "warn" | "info", message: string, fields?: Record<string, string>) => void;
  },
): () => void {
  const holder = crypto.randomUUID();
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      const status = await refreshAllRepositories(store, { online: options.online, holder });
      for (const failure of status?.failures ?? []) {
        options.report("warn", "tuf metadata could not be signed", failure);
      }
    } catch (error) {
      options.report("warn", `tuf refresh failed: ${String(error)}`);
    } finally {
      running = false;
    }
  };
  run();
  const timer = setInterval(run, options.everyMs ?? TUF_REFRESH_EVERY_MS);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}

/** What the health details, /metrics and the admin page show of the TUF repositories. */
export interface TufHealth {
  /** Whether a root was uploaded (else there is no repository to keep fresh). */
  configured: boolean;
  root_version: number | null;
  root_expires: string | null;
  /** Per project: when its timestamp expires, and whether its signing is stuck. */
  projects: Array<{ slug: string; timestamp_expires: string; stuck: boolean }>;
  /** Any project stuck, or the last refresh failed for one. */
  stuck: boolean;
  last_refresh: TufRefreshStatus | null;
}

export async function tufHealth(store: Store, nowMs = Date.now()): Promise<TufHealth> {
  const [root, states, projects, lastRefresh] = await Promise.all([
    getLatestTufRoot(store),
    listTufStates(store),
    listProjects(store),
    getTufRefreshStatus(store),
  ]);
  const slugs = new Map(projects.map((p) => [p.id, p]));
  const listed = states.flatMap((state) => {
    const project = slugs.get(state.project_id);
    if (project === undefined || project.state !== "active") return [];
    const left = Date.parse(state.timestamp.expires) - nowMs;
    return [{
      slug: project.slug,
      timestamp_expires: state.timestamp.expires,
      stuck: left < STUCK_BELOW_MS,
    }];
  });
  return {
    configured: root !== null,
    root_version: root?.version ?? null,
    root_expires: root?.expires ?? null,
    projects: listed,
    stuck: root !== null &&
      (listed.some((p) => p.stuck) || (lastRefresh?.failures.length ?? 0) > 0),
    last_refresh: lastRefresh,
  };
}

/**
 * One word for the health details (`GET /healthz/details`, docs/tuf.md
 * "Freshness"): `off` without a root, `stuck` when signing is, else `ok`.
 */
export async function tufSigningState(store: Store): Promise<"off" | "ok" | "stuck"> {
  const health = await tufHealth(store);
  return !health.configured ? "off" : health.stuck ? "stuck" : "ok";
}

/** The gauges of /metrics (docs/tuf.md "Freshness"), read at every scrape. */
export async function tufGauges(store: Store, nowMs: number): Promise<ScrapedGauge[]> {
  const health = await tufHealth(store, nowMs);
  if (!health.configured) return [];
  return [
    {
      name: "uds_tuf_timestamp_expires_in_seconds",
      help: "Seconds until a project's TUF timestamp.json expires (it is signed again at half " +
        "its life; clients refuse it after).",
      samples: health.projects.map((p) => ({
        labels: { project: p.slug },
        value: Math.round((Date.parse(p.timestamp_expires) - nowMs) / 1000),
      })),
    },
    {
      name: "uds_tuf_signing_stuck",
      help: "1 when the TUF metadata of a project is not being signed again in time (or the " +
        "last refresh failed), else 0.",
      samples: [{ labels: {}, value: health.stuck ? 1 : 0 }],
    },
    {
      name: "uds_tuf_root_expires_in_seconds",
      help: "Seconds until the TUF root expires: sign and upload the next version before.",
      samples: [{
        labels: {},
        value: Math.round((Date.parse(health.root_expires!) - nowMs) / 1000),
      }],
    },
  ];
}
