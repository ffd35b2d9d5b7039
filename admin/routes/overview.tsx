/** The dashboard and the audit log. */
import type { Hono } from "hono";
import {
  countReleases,
  getDailyDownloads,
  getDeletedApiKeys,
  getTopKeysByDownloads,
  listApiKeys,
  listAuditEntries,
  listProjects,
  listRecentReleases,
  searchAuditEntries,
} from "../../src/store/mod.ts";
import { keyState } from "../../src/store/access.ts";
import { pageContext } from "../context.ts";
import type { AdminEnv, ServiceDeps } from "../types.ts";
import { AuditPage } from "../views/audit.tsx";
import { DashboardPage } from "../views/dashboard.tsx";
import { chartRange } from "../views/chart.tsx";

const AUDIT_PAGE_SIZE = 50;
const TOP_KEYS = 5;

export function addOverviewRoutes(admin: Hono<AdminEnv>, deps: ServiceDeps): void {
  const { kv } = deps;

  admin.get("/", async (c) => {
    const days = chartRange(c.req.query("days"));
    const [projects, releases, keys, recent, series, topKeys] = await Promise.all([
      listProjects(kv),
      countReleases(kv),
      listApiKeys(kv),
      listRecentReleases(kv, 10),
      getDailyDownloads(kv, ["all"], days),
      getTopKeysByDownloads(kv, TOP_KEYS),
    ]);
    const keysById = new Map(keys.map((key) => [key.id, key]));
    const deletedKeys = await getDeletedApiKeys(
      kv,
      topKeys.map((top) => top.keyId).filter((id) => !keysById.has(id)),
    );
    const byId = new Map(projects.map((project) => [project.id, project]));
    const archived = projects.filter((project) => project.state === "archived").length;
    return c.html(
      <DashboardPage
        ctx={pageContext(c, deps)}
        data={{
          projects: { active: projects.length - archived, archived },
          releases,
          apiKeys: {
            active: keys.filter((key) => keyState(key) === "active").length,
            total: keys.length,
          },
          recent: recent.map((release) => ({ release, project: byId.get(release.project_id) })),
          chart: { series, days },
          topKeys: topKeys.map((top) => ({
            ...top,
            key: keysById.get(top.keyId),
            deletedName: deletedKeys.get(top.keyId)?.name,
          })),
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
      ? await searchAuditEntries(kv, { limit: AUDIT_PAGE_SIZE, before, filter })
      : await listAuditEntries(kv, { limit: AUDIT_PAGE_SIZE, before });
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
