import type { DeliveryTotals } from "../../src/stats/delivery.ts";
import type { DailyDownloads } from "../../src/stats/downloads.ts";
import type { Project } from "../../src/projects/types.ts";
import type { Release } from "../../src/releases/types.ts";
import type { LatestNotes } from "../../src/releases/latest_notes.ts";
import type { ListPage } from "../listing.ts";
import type { ProjectEditValues } from "../forms_project.ts";
import type { UploadValues } from "../forms_upload.ts";
import type { FormError } from "../types.ts";
import { humanBytes } from "../format.ts";
import { type ChartRange, DownloadChart } from "./chart.tsx";
import {
  ActionsCell,
  Breakable,
  DataTable,
  EditConflictNotice,
  FormErrorSummary,
  IfCan,
  InputField,
  ListPager,
  PageHead,
  PostButton,
  SearchBox,
  StateBadge,
  TagList,
  Time,
} from "./components.tsx";
import { can } from "../roles.ts";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";
import { ProjectFields } from "./project_fields.tsx";
import { RetentionCard, type RetentionCardProps } from "./retention.tsx";
import { VelopackCard, type VelopackCardProps } from "./velopack.tsx";
import { UploadFormBody } from "./upload_form.tsx";
import {
  RolloutCard,
  type RolloutCardProps,
  RolloutProgress,
  type RolloutProgressProps,
} from "./rollout.tsx";
import { ReleaseSafetyCard, type ReleaseSafetyCardProps } from "./release_safety.tsx";
import { AdoptionCard, type AdoptionCardProps } from "./adoption.tsx";
import {
  CreatedAndStateCells,
  RELEASE_COLUMNS,
  ReleaseCells,
  ReleaseMarkBadges,
  type ReleaseMarks,
} from "./release_cells.tsx";
import { ProjectFeeds, type ProjectFeedsProps } from "./project_feeds.tsx";

/** Download figures of one release. */
export interface ReleaseDownloads {
  total: number;
  last30: number;
  last90: number;
}

/** The project's pages: each concern has its own address (docs/admin-ui.md "A project's pages"). */
export const PROJECT_TABS = [
  ["overview", "", "Overview"],
  ["releases", "/releases", "Releases"],
  ["rollout", "/rollout", "Rollout and health", "Rollout"],
  ["feeds", "/feeds", "Feeds and signing", "Feeds"],
  ["settings", "/settings", "Settings"],
] as const;
export type ProjectTab = typeof PROJECT_TABS[number][0];

/** The address of a project's page. */
export function projectTabPath(slug: string, tab: ProjectTab): string {
  return `/admin/projects/${slug}${PROJECT_TABS.find(([name]) => name === tab)![1]}`;
}

/** Releases the overview lists, newest first. */
export const OVERVIEW_RELEASES = 8;

export interface ProjectPageProps {
  ctx: PageContext;
  project: Project;
  tab: ProjectTab;
  /** Rollout, rollback, critical and minimum-version marks of the releases. */
  marks: ReleaseMarks;
  /** The rollout's stage for the overview's progress bar. */
  progress: RolloutProgressProps;
  feeds: ProjectFeedsProps;
  /** One page of the project's releases (all states), newest first. */
  releases: ListPage<Release>;
  /** Releases of the project in every state, before search and paging. */
  releaseCount: number;
  /** The release the client API serves as latest, if any. */
  latestId: number | null;
  /** Which release which clients get and why, and a higher-looking active release offered to none. */
  latestNotes?: LatestNotes;
  /** Versions carried by more than one active release. */
  duplicateVersions: string[];
  downloads: Map<number, ReleaseDownloads>;
  /** This UTC month's bytes answered and what whole downloads would have cost (docs/feeds.md). */
  delivery?: DeliveryTotals;
  chart: { series: DailyDownloads[]; days: ChartRange };
  maxUploadBytes: number;
  edit: ProjectEditValues;
  editError?: FormError | null;
  upload: UploadValues;
  uploadError?: FormError | null;
  /** The version of the stored project the edit form starts from. */
  editVersion?: string;
  /** Another admin changed the project after the edit form was shown: it as it is now. */
  conflict?: Project | null;
  deleteError?: FormError | null;
  /** Downloads of the project's deleted releases (kept in its total). */
  deletedDownloads?: number;
  retention: Omit<RetentionCardProps, "ctx" | "project">;
  velopack: Omit<VelopackCardProps, "ctx" | "project">;
  rollout: Omit<RolloutCardProps, "csrfToken" | "slug" | "progress">;
  safety: Omit<ReleaseSafetyCardProps, "csrfToken" | "slug">;
  adoption: AdoptionCardProps;
}

export function ProjectPage(props: ProjectPageProps) {
  const { ctx, project, tab } = props;
  const label = PROJECT_TABS.find(([name]) => name === tab)![2];
  return (
    <Layout
      ctx={ctx}
      title={tab === "overview" ? project.name : `${label} · ${project.name}`}
      nav="projects"
    >
      <p class="breadcrumb">
        <a href="/admin/projects">Projects</a> /
      </p>
      <PageHead
        title={project.name}
        badges={<StateBadge state={project.state} />}
        slug={project.slug}
      />
      {tab === "overview" && project.description && <p class="lead">{project.description}</p>}
      {tab === "overview" && project.tags.length > 0 && <TagList tags={project.tags} />}
      <nav class="tabs" aria-label="Project pages" data-project-tabs>
        <ul>
          {PROJECT_TABS.map(([name, , text, short]) => (
            <li>
              <a
                href={projectTabPath(project.slug, name)}
                aria-current={name === tab ? "page" : undefined}
              >
                {short === undefined ? text : (
                  <>
                    <span class="tab-long">{text}</span>
                    <span class="tab-short" aria-hidden="true">{short}</span>
                  </>
                )}
                {name === "releases" && props.releaseCount > 0 && (
                  <span class="tab-count">{props.releaseCount}</span>
                )}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {tab === "overview" && <Overview {...props} />}
      {tab === "releases" && (
        <>
          <ReleasesTable {...props} />
          <IfCan ctx={ctx} route="POST /admin/projects/:slug/releases">
            <UploadForm {...props} />
          </IfCan>
          <DownloadChart
            series={props.chart.series}
            days={props.chart.days}
            path={projectTabPath(project.slug, "releases")}
            title="Downloads per day"
          />
          {props.delivery !== undefined && props.delivery.full > props.delivery.served && (
            <p class="hint" data-differential-savings>
              Differential downloads saved {humanBytes(props.delivery.full - props.delivery.served)}
              {" "}
              this month (
              {humanBytes(props.delivery.served)} sent instead of{" "}
              {humanBytes(props.delivery.full)}).
            </p>
          )}
        </>
      )}
      {tab === "rollout" && (
        <>
          <RolloutCard
            csrfToken={ctx.csrfToken}
            readOnly={!can(ctx.role, "POST /admin/projects/:slug/rollout")}
            slug={project.slug}
            {...props.rollout}
            progress={<RolloutProgress {...props.progress} />}
          />
          <ReleaseSafetyCard
            csrfToken={ctx.csrfToken}
            readOnly={!can(ctx.role, "POST /admin/projects/:slug/rollout/policy")}
            slug={project.slug}
            {...props.safety}
          />
          <AdoptionCard {...props.adoption} />
        </>
      )}
      {tab === "feeds" && (
        <>
          <ProjectFeeds {...props.feeds} />
          <IfCan ctx={ctx} route="POST /admin/projects/:slug/velopack">
            <VelopackCard ctx={ctx} project={project} {...props.velopack} />
          </IfCan>
        </>
      )}
      {tab === "settings" && (
        <>
          <IfCan ctx={ctx} route="POST /admin/projects/:slug">
            <EditForm {...props} />
          </IfCan>
          <RetentionCard ctx={ctx} project={project} {...props.retention} />
          <IfCan ctx={ctx} route="POST /admin/projects/:slug/archive">
            <DangerZone {...props} />
          </IfCan>
        </>
      )}
    </Layout>
  );
}

/**
 * The overview: which release clients get and why, the rollout's stage, the newest releases
 * with their marks, downloads, and (folded) the contract's upload and edit forms.
 */
function Overview(props: ProjectPageProps) {
  const { project, releases, releaseCount, latestId, latestNotes, marks } = props;
  const recent = releases.rows.slice(0, OVERVIEW_RELEASES);
  return (
    <>
      <section class="card" id="offer" aria-labelledby="offer-title">
        <h2 id="offer-title">What clients get</h2>
        {latestNotes && releaseCount > 0
          ? <LatestSummary notes={latestNotes} />
          : <p class="muted">No releases yet: upload the first one below.</p>}
        <RolloutProgress {...props.progress} />
        {props.progress.rollout !== null && props.progress.live && (
          <p class="card-links">
            <a href={projectTabPath(project.slug, "rollout")}>Rollout and release health</a>
          </p>
        )}
      </section>
      <section class="card" id="latest-releases" aria-labelledby="latest-releases-title">
        <div class="card-head">
          <h2 id="latest-releases-title">Latest releases</h2>
          {releaseCount > 0 && (
            <a href={`${projectTabPath(project.slug, "releases")}#releases`}>
              All {releaseCount} {releaseCount === 1 ? "release" : "releases"}
            </a>
          )}
        </div>
        {recent.length === 0
          ? <p class="muted">No releases yet.</p>
          : (
            <DataTable columns={["Version", "Created", "State", "Downloads"]}>
              {recent.map((release) => {
                const latest = release.id === latestId;
                return (
                  <tr
                    data-release-id={String(release.id)}
                    data-latest={latest ? "true" : undefined}
                    class={`state-${release.state}${latest ? " is-latest" : ""}`}
                  >
                    <td data-label="Version">
                      <a href={`/admin/releases/${release.id}`}>
                        <strong>
                          <Breakable text={release.version} />
                        </strong>
                      </a>
                      {latest && (
                        <>
                          {" "}
                          <span class="badge badge-latest">latest</span>
                        </>
                      )}
                      <ReleaseMarkBadges release={release} marks={marks} />
                    </td>
                    <CreatedAndStateCells release={release} />
                    <td data-label="Downloads" class="num nowrap">
                      {props.downloads.get(release.id)?.total ?? 0}
                    </td>
                  </tr>
                );
              })}
            </DataTable>
          )}
      </section>
      {can(props.ctx.role, "POST /admin/projects/:slug/releases") && (
        <section class="card overview-more" aria-label="More">
          <details class="fold" id="upload">
            <summary>Upload a release</summary>
            <UploadForm {...props} bare />
          </details>
          <IfCan ctx={props.ctx} route="POST /admin/projects/:slug">
            <details class="fold" id="edit">
              <summary>Edit name, description and tags</summary>
              <EditForm {...props} bare />
            </details>
          </IfCan>
        </section>
      )}
    </>
  );
}

function UploadForm(
  { ctx, project, maxUploadBytes, upload, uploadError, bare }: ProjectPageProps & {
    /** Inside the overview's fold: no card of its own. */
    bare?: boolean;
  },
) {
  const body = (
    <>
      {project.state === "archived" && (
        <p class="flash flash-warning" data-archived-hint>
          This project is archived: clients see none of its releases, including one uploaded now,
          until the project is activated again (on its Settings page).
        </p>
      )}
      <UploadFormBody
        ctx={ctx}
        action={`/admin/projects/${project.slug}/releases`}
        maxUploadBytes={maxUploadBytes}
        upload={upload}
        uploadError={uploadError}
      />
    </>
  );
  if (bare) return body;
  return (
    <section class="card" id="upload" aria-labelledby="upload-title">
      <h2 id="upload-title">Upload a release</h2>
      {body}
    </section>
  );
}

/** What the sentence below says: no latest, the latest for all, a running or a halted rollout. */
function offerKind(notes: LatestNotes): "none" | "latest" | "rollout" | "halted" {
  if (notes.latest === null) return "none";
  if (notes.rollout === null) return "latest";
  return notes.rollout.halted ? "halted" : "rollout";
}

/**
 * One sentence: which release which clients get, and why, read off the
 * offer the client API places each client by (src/releases/latest_notes.ts).
 */
function OfferSentence({ notes }: { notes: LatestNotes }) {
  const { latest, rollout } = notes;
  if (latest === null) return <>No release is latest: clients get 404 until a release is active.</>;
  const why = notes.reason === "chosen"
    ? "chosen with Make latest (or by an upload that asked not to replace it)"
    : "the newest active upload";
  const old = <strong>{latest.version}</strong>;
  const back = notes.rolledBack;
  if (back !== null && (rollout === null || rollout.halted)) {
    return (
      <>
        Every client gets {old}: <strong>{back.version}</strong> was rolled back at{" "}
        <Time iso={back.at} />. {rollout === null
          ? <>Making {back.version} latest again undoes the rollback.</>
          : <>Resuming its staged rollout undoes the rollback.</>}
      </>
    );
  }
  if (rollout === null) {
    return notes.reason === "chosen"
      ? (
        <>
          Clients get {old} as latest because it was{" "}
          {why}; archiving it makes the newest active release latest again.
        </>
      )
      : <>Clients get {old} as latest because it is {why}.</>;
  }
  const next = <strong>{rollout.release.version}</strong>;
  const theLatest = <>{old}, the latest ({why})</>;
  const testers = rollout.testerTag === null ? null : (
    <>
      keys tagged <code>{rollout.testerTag}</code> get {next}
    </>
  );
  if (rollout.halted) {
    return (
      <>
        Every client gets {theLatest}: the staged rollout of {next} is halted.
      </>
    );
  }
  if (rollout.percentage >= 100) {
    return (
      <>
        Every client gets {next} (staged rollout at 100%); {old}{" "}
        stays the latest until the rollout is completed or ended.
      </>
    );
  }
  if (rollout.percentage <= 0) {
    return testers === null
      ? <>Every client gets {theLatest}: the staged rollout of {next} is at 0%.</>
      : (
        <>
          Only {testers} (staged rollout at 0%); every other client gets {theLatest}.
        </>
      );
  }
  return (
    <>
      <strong data-offer-percentage>{rollout.percentage}%</strong> of installs get {next}{" "}
      (staged rollout) and the others get {theLatest}
      {testers && <>; {testers} whatever the percentage</>}.
    </>
  );
}

function LatestSummary({ notes }: { notes: LatestNotes }) {
  const latest = notes.latest;
  const back = notes.rolledBack;
  return (
    <>
      <p
        data-latest-reason={notes.reason ?? "none"}
        data-offer={back !== null ? "rolled-back" : offerKind(notes)}
      >
        <OfferSentence notes={notes} />
      </p>
      {notes.higher !== null && notes.higher.id === back?.release_id && (
        <p class="hint spaced" data-higher-version-not-latest="rolled-back">
          Release {notes.higher.version}{" "}
          is rolled back, so clients are not offered it although it looks newer. "Make latest" on it
          would undo the rollback.
        </p>
      )}
      {notes.higher !== null && notes.higher.id !== back?.release_id && (
        <p class="flash flash-warning" role="status" data-higher-version-not-latest>
          Release {notes.higher.version} (id{" "}
          {notes.higher.id}) is active and looks like a higher version than the latest
          {latest ? ` (${latest.version})` : ""}, but clients are not offered it. Use "Make latest"
          on it if it should be.
        </p>
      )}
    </>
  );
}

function ReleasesTable(props: ProjectPageProps) {
  const {
    ctx,
    project,
    releases,
    releaseCount,
    latestId,
    latestNotes,
    duplicateVersions,
    downloads,
    marks,
  } = props;
  const path = projectTabPath(project.slug, "releases");
  return (
    <section class="card" id="releases" aria-labelledby="releases-title">
      <h2 id="releases-title">Releases</h2>
      {latestNotes && releaseCount > 0 && <LatestSummary notes={latestNotes} />}
      {duplicateVersions.length > 0 && (
        <p class="flash flash-warning" role="status" data-duplicate-version>
          More than one active release has version{" "}
          {duplicateVersions.join(", ")}. Clients get the one marked latest (the newest upload);
          archive the others to avoid confusion.
        </p>
      )}
      {releaseCount > 0 && (
        <SearchBox
          action={`${path}#releases`}
          q={releases.q}
          label="Search releases"
          placeholder="Version or file name"
        />
      )}
      {releaseCount === 0
        ? <p class="muted">No releases yet.</p>
        : releases.rows.length > 0 && (
          <DataTable columns={[...RELEASE_COLUMNS, "SHA-256", "Downloads"]} actions>
            {releases.rows.map((release) => {
              const latest = release.id === latestId;
              const counts = downloads.get(release.id) ?? { total: 0, last30: 0, last90: 0 };
              return (
                <tr
                  data-release-id={String(release.id)}
                  data-latest={latest ? "true" : undefined}
                  class={`state-${release.state}${latest ? " is-latest" : ""}`}
                >
                  <ReleaseCells release={release} latest={latest} notes marks={marks} />
                  <td data-label="SHA-256">
                    <code class="hash">{release.checksum_sha256}</code>
                  </td>
                  <td data-label="Downloads" class="nowrap">
                    <strong data-downloads-total>{String(counts.total)}</strong>
                    <span class="muted">{counts.last30} in 30 days</span>
                    <span class="muted">{counts.last90} in 90 days</span>
                  </td>
                  <ActionsCell>
                    <a
                      class="button button-small"
                      href={`/admin/releases/${release.id}`}
                      title="Edit, download or delete"
                    >
                      {can(ctx.role, "POST /admin/releases/:id") ? "Edit" : "Open"}
                    </a>
                    {can(ctx.role, "POST /admin/releases/:id/archive") &&
                      (release.state === "draft"
                        ? (
                          <PostButton
                            action={`/admin/releases/${release.id}/publish`}
                            csrfToken={ctx.csrfToken}
                            label="Publish"
                          />
                        )
                        : (
                          <PostButton
                            action={`/admin/releases/${release.id}/${
                              release.state === "active" ? "archive" : "activate"
                            }`}
                            csrfToken={ctx.csrfToken}
                            label={release.state === "active" ? "Archive" : "Activate"}
                          />
                        ))}
                    {release.state === "active" && !latest &&
                      can(ctx.role, "POST /admin/releases/:id/make-latest") && (
                      <PostButton
                        action={`/admin/releases/${release.id}/make-latest`}
                        csrfToken={ctx.csrfToken}
                        label={marks.rolledBackId === release.id
                          ? "Make latest (undo rollback)"
                          : "Make latest"}
                      />
                    )}
                  </ActionsCell>
                </tr>
              );
            })}
          </DataTable>
        )}
      <ListPager list={releases} total={releaseCount} noun="releases" />
      {(props.deletedDownloads ?? 0) > 0 && (
        <p class="hint" data-deleted-downloads>
          Deleted releases of this project had {props.deletedDownloads}{" "}
          {props.deletedDownloads === 1 ? "download" : "downloads"}; the chart still counts them.
        </p>
      )}
    </section>
  );
}

function EditForm(
  { ctx, project, edit, editError, editVersion, conflict, bare }: ProjectPageProps & {
    /** Inside the overview's fold: no card of its own. */
    bare?: boolean;
  },
) {
  const body = (
    <>
      {conflict && (
        <EditConflictNotice what="project">
          <dt>Name</dt>
          <dd data-current-name>{conflict.name}</dd>
          <dt>Description</dt>
          <dd class="pre">{conflict.description || "(none)"}</dd>
          <dt>Tags</dt>
          <dd data-current-tags>{conflict.tags.join(", ") || "(none)"}</dd>
        </EditConflictNotice>
      )}
      <FormErrorSummary error={editError} />
      <form method="post" action={`/admin/projects/${project.slug}`} class="stack">
        <CsrfInput token={ctx.csrfToken} />
        {editVersion && <input type="hidden" name="expected_version" value={editVersion} />}
        <ProjectFields
          idPrefix={bare ? "overview-edit" : "edit"}
          values={edit}
          error={editError}
          tagsHint="Changes apply to API keys with tag scopes at once."
        />
        <p class="hint">
          The slug <code>{project.slug}</code> never changes.
        </p>
        <button type="submit" class="button button-primary">Save changes</button>
      </form>
    </>
  );
  if (bare) return body;
  return (
    <section class="card" id="settings" aria-labelledby="settings-title">
      <h2 id="settings-title">Project settings</h2>
      {body}
    </section>
  );
}

function DangerZone({ ctx, project, deleteError }: ProjectPageProps) {
  const active = project.state === "active";
  return (
    <section class="card" id="archive" aria-labelledby="archive-title">
      <h2 id="archive-title">{active ? "Archive or delete" : "Re-activate or delete"}</h2>
      <div class="danger-zone">
        <h3>{active ? "Archive project" : "Re-activate project"}</h3>
        <p class="hint">
          {active
            ? "An archived project and its releases disappear from the client API. Nothing is deleted."
            : "The project and its active releases become visible to API keys again."}
        </p>
        <PostButton
          action={`/admin/projects/${project.slug}/${active ? "archive" : "activate"}`}
          csrfToken={ctx.csrfToken}
          label={active ? "Archive project" : "Activate project"}
          buttonClass="button"
        />
      </div>
      <div class="danger-zone" id="delete-project">
        <h3>Delete project</h3>
        <p class="hint">
          Only a project without active releases can be deleted (archive or delete them first). Its
          archived releases and their files are deleted with it; the audit log keeps what was
          deleted. Clients that use the slug get 404.
        </p>
        <FormErrorSummary error={deleteError} />
        <form method="post" action={`/admin/projects/${project.slug}/delete`} class="stack">
          <CsrfInput token={ctx.csrfToken} />
          <InputField
            id="confirm-slug"
            name="confirm_slug"
            label={
              <>
                Type the slug <code>{project.slug}</code> to confirm
              </>
            }
            value=""
            autocomplete="off"
            autocapitalize="none"
            spellcheck={false}
            error={deleteError}
            required
          />
          <button type="submit" class="button button-danger">Delete project</button>
        </form>
      </div>
    </section>
  );
}
