/** The dashboard and the audit log. */
import type { Hono } from "hono";
import { describeMissingKeyFiles, findMissingKeyFiles } from "../../src/signing/key_file_check.ts";
import {
  countExpiredEnabledKeys,
  getCounts,
  getStorageByProject,
} from "../../src/projects/aggregates.ts";
import { getApiKey } from "../../src/credentials/api_keys.ts";
import { listAuditEntries } from "../../src/kv/audit.ts";
import { searchAuditEntries } from "../../src/kv/audit_search.ts";
import { getDeletedApiKeys } from "../../src/lifecycle/delete_records.ts";
import { getProjectsByIds } from "../../src/projects/projects.ts";
import { getDailyDownloads, getTopKeys, listRecentReleases } from "../../src/stats/downloads.ts";
import { needsAttention } from "../attention.ts";
import { pageContext } from "../context.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import { AuditPage } from "../views/audit.tsx";
import { DashboardPage } from "../views/dashboard.tsx";
import { chartRange } from "../views/chart.tsx";

const AUDIT_PAGE_SIZE = 50;
const TOP_KEYS = 5;
/** Projects listed by storage used (the rest count in the total). */
const STORAGE_PROJECTS = 10;
/** How old the top keys may be (they are recomputed from every key's counter). */
const TOP_KEYS_MAX_AGE_MS = 60_000;
/** Expired keys counted at most for "N active" (beyond, the figure is an upper bound). */
const EXPIRED_COUNTED = 1_000;

export function addOverviewRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  admin.get("/", async (c) => {
    const days = chartRange(c.req.query("days"));
    const [counts, expired, recent, series, topKeys, storage, attention] = await Promise.all([
      getCounts(c.var.store),
      countExpiredEnabledKeys(c.var.store, { now: new Date().toISOString(), cap: EXPIRED_COUNTED }),
      listRecentReleases(c.var.store, 10),
      getDailyDownloads(c.var.store, ["all"], { days }),
      getTopKeys(c.var.store, { limit: TOP_KEYS, maxAgeMs: TOP_KEYS_MAX_AGE_MS }),
      getStorageByProject(c.var.store, { limit: STORAGE_PROJECTS }),
      needsAttention(c.var.store, { role: c.get("role"), nowMs: Date.now() }),
    ]);
    const projectIds = [
      ...new Set([
        ...recent.map((release) => release.project_id),
        ...storage.top.map((top) => top.projectId),
      ]),
    ];
    const [projects, keys] = await Promise.all([
      getProjectsByIds(c.var.store, projectIds),
      Promise.all(topKeys.map((top) => getApiKey(c.var.store, top.keyId))),
    ]);
    // A deleted key keeps its name for the top keys.
    const deletedKeys = await getDeletedApiKeys(
      c.var.store,
      topKeys.filter((_, i) => keys[i] === null).map((top) => top.keyId),
    );
    const byId = new Map(projects.map((project) => [project.id, project]));
    const { projects: p, releases: r, api_keys: k } = counts;
    const enabled = k.enabled ?? 0;
    // Private key files the records name but the data dir lacks (a restore without them).
    const missing = await findMissingKeyFiles(c.var.store, deps.config.dataDir);
    return c.html(
      <DashboardPage
        ctx={pageContext(c, deps)}
        data={{
          attention,
          projects: { active: p.active ?? 0, archived: p.archived ?? 0 },
          releases: (r.active ?? 0) + (r.archived ?? 0),
          apiKeys: {
            active: Math.max(0, enabled - expired.count),
            activeAtMost: expired.capped,
            total: enabled + (k.disabled ?? 0),
          },
          recent: recent.map((release) => ({ release, project: byId.get(release.project_id) })),
          chart: { series, days },
          storage: {
            total: storage.total,
            top: storage.top.map(({ projectId, bytes }) => ({
              project: byId.get(projectId),
              bytes,
            })),
          },
          topKeys: topKeys.map((top, i) => ({
            ...top,
            key: keys[i] ?? undefined,
            deletedName: deletedKeys.get(top.keyId)?.name,
          })),
          missingKeyFiles: describeMissingKeyFiles(missing, { signing: deps.config.signing }),
        }}
      />,
    );
  });

  admin.get("/audit", async (c) => {
    const before = c.req.query("before");
    const filter = {
      actor: (c.req.query("actor") ?? "").slice(0, 200),
      action: (c.req.query("action") ?? "").slice(0, 100),
      target: (c.req.query("target") ?? "").slice(0, 500),
    };
    const filtered = Object.values(filter).some((value) => value.trim() !== "");
    const { entries, next } = filtered
      ? await searchAuditEntries(c.var.store, { limit: AUDIT_PAGE_SIZE, before, filter })
      : await listAuditEntries(c.var.store, { limit: AUDIT_PAGE_SIZE, before });
    return c.html(
      <AuditPage
        ctx={pageContext(c, deps)}
        entries={entries}
        next={next}
        first={!before}
        filter={filter}
      />,
    );
  });
}
