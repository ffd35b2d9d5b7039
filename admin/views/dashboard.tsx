import type { AttentionItem } from "../attention.ts";
import { can } from "../roles.ts";
import type { DailyDownloads } from "../../src/stats/downloads.ts";
import type { Project } from "../../src/projects/types.ts";
import type { ApiKey } from "../../src/credentials/types.ts";
import type { Release } from "../../src/releases/types.ts";
import { type ChartRange, DownloadChart } from "./chart.tsx";
import { humanBytes } from "../format.ts";
import { DataTable } from "./components.tsx";
import { Layout, type PageContext } from "./layout.tsx";
import { RELEASE_COLUMNS, ReleaseCells } from "./release_cells.tsx";
import { MissingKeyFilesNotice } from "./missing_key_files.tsx";
import type { MissingKeyNotice } from "../../src/signing/key_file_check.ts";

export interface DashboardData {
  /** What needs someone now (attention.ts), for the signed-in account's role. */
  attention: AttentionItem[];
  projects: { active: number; archived: number };
  releases: number;
  /** `activeAtMost`: more keys expired than were counted, so `active` is an upper bound. */
  apiKeys: { active: number; activeAtMost?: boolean; total: number };
  recent: Array<{ release: Release; project: Project | undefined }>;
  chart: { series: DailyDownloads[]; days: ChartRange };
  topKeys: Array<
    { keyId: number; key: ApiKey | undefined; downloads: number; deletedName?: string }
  >;
  /** Bytes of all artifacts, and the projects that store the most. */
  storage: { total: number; top: Array<{ project: Project | undefined; bytes: number }> };
  /** The private key files missing from the data dir (src/signing/key_file_check.ts). */
  missingKeyFiles: readonly MissingKeyNotice[];
}

export function DashboardPage({ ctx, data }: { ctx: PageContext; data: DashboardData }) {
  return (
    <Layout ctx={ctx} title="Dashboard" nav="dashboard">
      <MissingKeyFilesNotice notices={data.missingKeyFiles} />
      <h1>Dashboard</h1>
      <AttentionList items={data.attention} />
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
            <span class="stat-note">
              {data.apiKeys.activeAtMost ? "at most " : ""}
              {data.apiKeys.active} active
            </span>
          </a>
        </li>
      </ul>

      <section class="card">
        <h2>Quick links</h2>
        <ul class="quick-links">
          {can(ctx.role, "POST /admin/projects") && (
            <li>
              <a class="button button-primary" href="/admin/projects?new=1#new-project">
                New project
              </a>
            </li>
          )}
          {can(ctx.role, "POST /admin/projects/:slug/releases") && (
            <li>
              <a class="button" href="/admin/upload">Upload a release</a>
            </li>
          )}
          {can(ctx.role, "POST /admin/api-keys") && (
            <li>
              <a class="button" href="/admin/api-keys?new=1#new-key">New API key</a>
            </li>
          )}
          <li>
            <a class="button" href="/admin/projects">Projects</a>
          </li>
          <li>
            <a class="button" href="/admin/audit">Audit log</a>
          </li>
        </ul>
      </section>

      <DownloadChart
        series={data.chart.series}
        days={data.chart.days}
        path="/admin"
        title="Downloads per day, all projects"
      />

      <section class="card" id="top-keys" aria-labelledby="top-keys-title">
        <h2 id="top-keys-title">Top API keys by downloads</h2>
        <p class="hint">Counted at most a minute ago.</p>
        {data.topKeys.length === 0 ? <NoTopKeys chart={data.chart.series} /> : (
          <ol class="top-keys">
            {data.topKeys.map(({ key, keyId, downloads, deletedName }) => (
              <li data-top-key-id={String(keyId)}>
                <span>
                  {key ? <strong>{key.name}</strong> : (
                    <span class="muted">
                      deleted key{deletedName !== undefined && (
                        <>
                          {" "}
                          <s>{deletedName}</s>
                        </>
                      )}
                    </span>
                  )} <span class="muted">id {keyId}</span>
                </span>
                <span class="top-keys-count">
                  <strong>{downloads}</strong> {downloads === 1 ? "download" : "downloads"}
                </span>
              </li>
            ))}
          </ol>
        )}
      </section>

      <section class="card" id="storage" aria-labelledby="storage-title">
        <h2 id="storage-title">Storage used</h2>
        <p>
          <strong data-storage-total={data.storage.total}>{humanBytes(data.storage.total)}</strong>
          {" "}
          in all projects' files (every state; a project's retention policy can reclaim it).
        </p>
        {data.storage.top.length > 0 && (
          <DataTable columns={["Project", "Files"]}>
            {data.storage.top.map(({ project, bytes }) => (
              <tr data-storage-project={project?.slug ?? ""} data-bytes={bytes}>
                <td data-label="Project">
                  {project
                    ? (
                      <a href={`/admin/projects/${project.slug}/settings#retention`}>
                        {project.name}
                      </a>
                    )
                    : <span class="muted">unknown</span>}
                </td>
                <td data-label="Files">{humanBytes(bytes)}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </section>

      <section class="card">
        <h2>Recent releases</h2>
        {data.recent.length === 0
          ? <p class="muted">No releases yet. Open a project to upload its first release.</p>
          : (
            <DataTable columns={["Project", ...RELEASE_COLUMNS]}>
              {data.recent.map(({ release, project }) => (
                <tr data-release-id={String(release.id)}>
                  <td data-label="Project">
                    {project
                      ? <a href={`/admin/projects/${project.slug}`}>{project.name}</a>
                      : <span class="muted">unknown</span>}
                  </td>
                  <ReleaseCells release={release} />
                </tr>
              ))}
            </DataTable>
          )}
      </section>
    </Layout>
  );
}

/**
 * The top keys card without keys: "no downloads" only when the chart beside
 * it counts none either (the top keys are a snapshot; the chart is live).
 */
function NoTopKeys({ chart }: { chart: DailyDownloads[] }) {
  const counted = chart.some((day) => day.downloads > 0);
  return counted
    ? (
      <p class="muted" data-top-keys="pending">
        The keys of the latest downloads show here within a minute.
      </p>
    )
    : <p class="muted" data-top-keys="none">No downloads yet.</p>;
}

/**
 * What needs someone, one line each with the page to act on (attention.ts); "Nothing needs you"
 * when the list is empty.
 */
function AttentionList({ items }: { items: readonly AttentionItem[] }) {
  return (
    <section
      class="card attention"
      id="attention"
      aria-labelledby="attention-title"
      data-attention-count={items.length}
    >
      <h2 id="attention-title">Needs attention</h2>
      {items.length === 0
        ? <p class="muted" data-attention="none">Nothing needs you right now.</p>
        : (
          <ul class="attention-list">
            {items.map((item) => (
              <li class={`attention-item attention-${item.severity}`} data-attention={item.kind}>
                <span class={`badge badge-attention-${item.severity}`}>{item.label}</span>
                <a href={item.href} class="attention-subject" title={item.subject}>
                  {item.subject}
                </a>
                <span class="attention-detail" title={item.detail}>{item.detail}</span>
              </li>
            ))}
          </ul>
        )}
    </section>
  );
}
