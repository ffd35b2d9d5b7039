import type { Project, Release } from "../../src/store/mod.ts";
import { humanBytes } from "../format.ts";
import { DataTable, StateBadge, Time } from "./components.tsx";
import { Layout, type PageContext } from "./layout.tsx";

export interface DashboardData {
  projects: { active: number; archived: number };
  releases: number;
  apiKeys: { active: number; total: number };
  recent: Array<{ release: Release; project: Project | undefined }>;
}

export function DashboardPage({ ctx, data }: { ctx: PageContext; data: DashboardData }) {
  return (
    <Layout ctx={ctx} title="Dashboard" nav="dashboard">
      <h1>Dashboard</h1>
      <ul class="stats" aria-label="Totals">
        <li class="stat">
          <a href="/admin/projects">
            <span class="stat-value" data-count="projects">
              {data.projects.active + data.projects.archived}
            </span>
            <span class="stat-label">projects</span>
            <span class="stat-note">{data.projects.archived} archived</span>
          </a>
        </li>
        <li class="stat">
          <span class="stat-value" data-count="releases">{data.releases}</span>
          <span class="stat-label">releases</span>
          <span class="stat-note">in every state</span>
        </li>
        <li class="stat">
          <a href="/admin/api-keys">
            <span class="stat-value" data-count="api-keys">{data.apiKeys.total}</span>
            <span class="stat-label">API keys</span>
            <span class="stat-note">{data.apiKeys.active} active</span>
          </a>
        </li>
      </ul>

      <section class="card">
        <h2>Quick links</h2>
        <ul class="quick-links">
          <li>
            <a class="button button-primary" href="/admin/projects#new-project">New project</a>
          </li>
          <li>
            <a class="button" href="/admin/projects">Upload a release</a>
          </li>
          <li>
            <a class="button" href="/admin/api-keys#new-key">New API key</a>
          </li>
          <li>
            <a class="button" href="/admin/audit">Audit log</a>
          </li>
        </ul>
      </section>

      <section class="card">
        <h2>Recent releases</h2>
        {data.recent.length === 0
          ? <p class="muted">No releases yet. Open a project to upload its first release.</p>
          : (
            <DataTable columns={["Project", "Version", "File", "Size", "Created", "State"]}>
              {data.recent.map(({ release, project }) => (
                <tr data-release-id={String(release.id)}>
                  <td data-label="Project">
                    {project
                      ? <a href={`/admin/projects/${project.slug}`}>{project.name}</a>
                      : <span class="muted">unknown</span>}
                  </td>
                  <td data-label="Version">
                    <strong>{release.version}</strong>
                    {release.build && <span class="muted">build {release.build}</span>}
                  </td>
                  <td data-label="File" class="break">{release.filename}</td>
                  <td data-label="Size" title={`${release.size_bytes} bytes`}>
                    {humanBytes(release.size_bytes)}
                  </td>
                  <td data-label="Created">
                    <Time iso={release.created_at} />
                  </td>
                  <td data-label="State">
                    <StateBadge state={release.state} />
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
      </section>
    </Layout>
  );
}
