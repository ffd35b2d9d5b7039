/** The dashboard and the audit log. */
import type { Hono } from "hono";
import {
  countReleases,
  listApiKeys,
  listAuditEntries,
  listProjects,
  listRecentReleases,
} from "../../src/store/mod.ts";
import { pageContext } from "../context.ts";
import type { AdminEnv, AppDeps } from "../types.ts";
import { AuditPage } from "../views/audit.tsx";
import { DashboardPage } from "../views/dashboard.tsx";
import { keyState } from "../views/api_keys.tsx";

const AUDIT_PAGE_SIZE = 50;

export function addOverviewRoutes(admin: Hono<AdminEnv>, deps: AppDeps): void {
  const { kv } = deps;

  admin.get("/", async (c) => {
    const [projects, releases, keys, recent] = await Promise.all([
      listProjects(kv),
      countReleases(kv),
      listApiKeys(kv),
      listRecentReleases(kv, 10),
    ]);
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
        }}
      />,
    );
  });

  admin.get("/audit", async (c) => {
    const before = c.req.query("before");
    const { entries, next } = await listAuditEntries(kv, { limit: AUDIT_PAGE_SIZE, before });
    return c.html(
      <AuditPage ctx={pageContext(c, deps)} entries={entries} next={next} first={!before} />,
    );
  });
}
