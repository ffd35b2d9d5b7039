/** Loading a project for its page, and rendering that page (also with form errors). */
import type { Store } from "../../src/kv/store.ts";
import { HTTPException } from "hono/http-exception";
import { isSlug } from "../../src/lib/limits.ts";
import { adoptionDay, type AdoptionFigures, getAdoption } from "../../src/reports/adoption.ts";
import { getProjectBytes, getProjectReleaseCount } from "../../src/projects/aggregates.ts";
import { getDeletedDownloads } from "../../src/lifecycle/delete_records.ts";
import { getProjectDeliveryMonth, utcMonth } from "../../src/stats/delivery.ts";
import { getProjectVersioned } from "../../src/edits/edits.ts";
import { getLatestView, type LatestView } from "../../src/releases/latest_view.ts";
import { getProjectBySlug } from "../../src/projects/projects.ts";
import {
  duplicateActiveVersions,
  getDownloadCounts,
  getLatestChoice,
  getRelease,
  listReleasesPage,
} from "../../src/releases/releases.ts";
import { getRetentionPolicy } from "../../src/lifecycle/retention_records.ts";
import { getVelopackSettings } from "../../src/velopack/settings.ts";
import { getRollout } from "../../src/releases/rollouts.ts";
import { getDailyDownloads, getRecentDownloadCountsByWindow } from "../../src/stats/downloads.ts";
import type { RetentionPolicy } from "../../src/projects/retention_policy.ts";
import type { Project } from "../../src/projects/types.ts";
import type { Release, Rollout } from "../../src/releases/types.ts";
import { type AdminContext, pageContext } from "../context.ts";
import { cursorListPage, PAGE_SIZE, SEARCH_SCAN, searchOf } from "../listing.ts";
import type { FormError, RouteDeps } from "../types.ts";
import { chartRange } from "../views/chart.tsx";
import { editValuesOf, type ProjectEditValues } from "../forms_project.ts";
import { EMPTY_UPLOAD_FORM, type UploadValues } from "../forms_upload.ts";
import {
  OVERVIEW_RELEASES,
  ProjectPage,
  type ProjectTab,
  projectTabPath,
} from "../views/project.tsx";
import { getSparkleFeedKeyByProject } from "../../src/feeds/sparkle_keys.ts";
import { type LatestNotes, latestNotes } from "../../src/releases/latest_notes.ts";
import { getReleasePolicy, type ReleasePolicy } from "../../src/releases/release_policy.ts";
import type { ReleaseMarks } from "../views/release_cells.tsx";
import { offerAt } from "../../src/releases/offer.ts";
import { planRetention } from "../../src/lifecycle/retention.ts";
import type { RetentionValues } from "../views/retention.tsx";
import { EMPTY_ROLLOUT_FORM, type RolloutValues } from "../forms_rollout.ts";
import type { SafetyValues } from "../views/release_safety.tsx";
import { releaseSafetyOf } from "./release_safety_card.ts";

export async function loadProject(store: Store, slug: string): Promise<Project> {
  const project = isSlug(slug) ? await getProjectBySlug(store, slug) : null;
  if (project === null) throw new HTTPException(404, { message: `There is no project "${slug}".` });
  return project;
}

/**
 * The marks of a project's releases (rolling out, rolled back, critical, minimum version),
 * from its latest view and release policy: the rollback is marked while it is in force.
 */
function releaseMarksOf(
  view: LatestView,
  policy: ReleasePolicy,
  rolledBack: LatestNotes["rolledBack"],
): ReleaseMarks {
  return {
    rolloutId: view.rollout !== null && !view.rollout.record.halted
      ? view.rollout.release.id
      : null,
    rolledBackId: rolledBack?.release_id ?? null,
    criticalIds: policy.critical_ids,
    minimumVersion: policy.minimum_version,
  };
}

/** The marks of a project's releases, read for a page that shows one release. */
export async function loadReleaseMarks(
  store: Store,
  projectId: number,
): Promise<ReleaseMarks> {
  const [view, policy] = await Promise.all([
    getLatestView(store, projectId),
    getReleasePolicy(store, projectId),
  ]);
  const notes = latestNotes([], {
    offer: offerAt(view, Date.now()),
    choice: null,
    rolledBack: policy.rolled_back,
  });
  return releaseMarksOf(view, policy, notes.rolledBack);
}

/** What the pages without the adoption card pass for it (they do not read the figures). */
const NO_ADOPTION: AdoptionFigures = {
  releases: new Map(),
  total: { d1: 0, d7: 0, d30: 0 },
  stale: 0,
  daily: new Map(),
};

/** The project a page shows, the forms sent back with their errors, and its status. */
export interface ProjectPageOptions {
  project: Project;
  edit?: ProjectEditValues;
  editError?: FormError;
  upload?: UploadValues;
  uploadError?: FormError;
  /** Another admin changed the project after the edit form was shown: it as it is now. */
  conflict?: Project;
  deleteError?: FormError;
  /** The retention form as entered: a dry run of it (not saved), or with its error. */
  retention?: { values: RetentionValues; error?: FormError; policy?: RetentionPolicy };
  /** The rollout form as sent, with its error. */
  rollout?: { values: RolloutValues; error: FormError };
  /** The Velopack form as sent, with its error. */
  velopack?: { value: string; error: FormError };
  /** The release safety forms as sent, with their error. */
  safety?: { values: SafetyValues; error: FormError };
  status?: 200 | 400 | 403 | 409 | 413 | 503 | 507;
  /** The page to show; a form sent back shows the page it is on. */
  tab?: ProjectTab;
}

/** The page a form sent back belongs on. */
function tabOf(form: Omit<ProjectPageOptions, "project" | "status">): ProjectTab {
  if (form.tab !== undefined) return form.tab;
  if (form.upload !== undefined || form.uploadError !== undefined) return "releases";
  if (form.rollout !== undefined || form.safety !== undefined) return "rollout";
  if (form.velopack !== undefined) return "feeds";
  if (
    form.edit !== undefined || form.editError !== undefined || form.conflict !== undefined ||
    form.deleteError !== undefined || form.retention !== undefined
  ) return "settings";
  return "overview";
}

export async function renderProjectPage(
  c: AdminContext,
  deps: RouteDeps,
  { project, status = 200, ...form }: ProjectPageOptions,
): Promise<Response> {
  const tab = tabOf(form);
  // A form sent back shows the first page: the query belongs to the page the form was on.
  const query = c.req.method === "GET" ? c.req.query() : {};
  const days = chartRange(query.days);
  const { q, match } = searchOf(
    query,
    (release: Release) => [release.version, release.build, release.filename],
  );
  const today = adoptionDay(Date.now());
  // The rollout and the latest view serve the releases, rollout and release safety cards.
  const [rolloutRecord, view] = await Promise.all([
    getRollout(c.var.store, project.id),
    getLatestView(c.var.store, project.id),
  ]);
  const [
    page,
    releaseCount,
    series,
    stored,
    deletedDownloads,
    choice,
    retention,
    rollout,
    adoption,
    safety,
    delivery,
    velopack,
  ] = await Promise.all([
    listReleasesPage(c.var.store, project.id, {
      limit: tab === "overview" ? OVERVIEW_RELEASES : PAGE_SIZE,
      cursor: tab === "overview" ? {} : query,
      maxScan: match ? SEARCH_SCAN : PAGE_SIZE + 1,
      match: tab === "overview" ? undefined : match,
    }),
    getProjectReleaseCount(c.var.store, project.id),
    tab === "releases" ? getDailyDownloads(c.var.store, ["project", project.id], { days }) : [],
    getProjectVersioned(c.var.store, project.id),
    tab === "releases" ? getDeletedDownloads(c.var.store, project.id) : undefined,
    getLatestChoice(c.var.store, project.id),
    tab === "settings" ? retentionOf(c.var.store, project.id, form.retention) : null,
    rolloutOf(c.var.store, { rollout: rolloutRecord, view }),
    tab === "rollout" ? getAdoption(c.var.store, project.id, today) : NO_ADOPTION,
    releaseSafetyOf(c.var.store, {
      project,
      rollout: rolloutRecord,
      form: form.safety,
      detail: tab === "rollout",
    }),
    tab === "releases"
      ? getProjectDeliveryMonth(c.var.store, project.id, utcMonth(new Date()))
      : undefined,
    tab !== "feeds" ? undefined : form.velopack ?? getVelopackSettings(c.var.store, project.id)
      .then((settings) => ({ value: String(settings.deltas_kept), error: undefined })),
  ]);
  const sparkle = tab === "feeds"
    ? await getSparkleFeedKeyByProject(c.var.store, project.id)
    : null;
  // The latest pointer's release (getLatestRelease reads the same view).
  const latest = view.release;
  const releases = cursorListPage(page, {
    query,
    q,
    total: releaseCount,
    path: projectTabPath(project.slug, "releases"),
    anchor: "#releases",
  });
  const ids = releases.rows.map((release) => release.id);
  const [totals, recent] = await Promise.all([
    getDownloadCounts(c.var.store, ids),
    getRecentDownloadCountsByWindow(c.var.store, ids, { windows: [30, 90] }),
  ]);
  const downloads = new Map(ids.map((id) => {
    const [last30, last90] = recent.get(id)!;
    return [id, { total: totals.get(id) ?? 0, last30, last90 }];
  }));
  const offer = offerAt(view, Date.now());
  const notes = latestNotes(latest === null ? releases.rows : [latest, ...releases.rows], {
    offer,
    choice,
    rolledBack: safety.policy.rolled_back,
  });
  const ctx = pageContext(c, deps);
  return c.html(
    <ProjectPage
      ctx={ctx}
      project={project}
      tab={tab}
      marks={releaseMarksOf(view, safety.policy, notes.rolledBack)}
      progress={{
        rollout: rollout.rollout,
        live: rollout.live,
        percentageNow: rollout.percentageNow,
        versions: rollout.versions,
        stages: safety.gated ? safety.gates!.gates.stages : null,
        waiting: safety.stage?.waiting ?? null,
        haltReason: safety.haltReason,
      }}
      feeds={{
        slug: project.slug,
        baseUrl: deps.config.baseUrl,
        sparkle,
        canSign: ctx.role === "admin",
      }}
      releases={releases}
      releaseCount={releaseCount}
      latestId={latest?.state === "active" ? latest.id : null}
      latestNotes={notes}
      duplicateVersions={duplicateActiveVersions(releases.rows)}
      downloads={downloads}
      delivery={delivery}
      chart={{ series, days }}
      maxUploadBytes={deps.config.maxUploadBytes}
      edit={form.edit ?? editValuesOf(stored?.value ?? project)}
      editError={form.editError}
      editVersion={stored?.version ?? ""}
      conflict={form.conflict}
      deleteError={form.deleteError}
      deletedDownloads={deletedDownloads}
      upload={form.upload ?? EMPTY_UPLOAD_FORM}
      uploadError={form.uploadError}
      // Read for the settings and feeds pages, the only ones that show them.
      retention={retention!}
      velopack={velopack!}
      adoption={{
        figures: adoption,
        today,
        latestId: latest?.id ?? null,
        versions: await versionsOf(c.var.store, [...adoption.releases.keys()]),
      }}
      safety={safety}
      rollout={{
        ...rollout,
        candidates: releases.rows.filter((release) =>
          release.state === "active" && release.id !== latest?.id
        ),
        values: form.rollout?.values ?? EMPTY_ROLLOUT_FORM,
        error: form.rollout?.error,
      }}
    />,
    status,
  );
}

function valuesOf(policy: RetentionPolicy): RetentionValues {
  return {
    keep_active: policy.keep_active?.toString() ?? "",
    archived_max_days: policy.archived_max_days?.toString() ?? "",
  };
}

/** The retention card: the saved policy and its plan, or the form as sent (preview or error). */
async function retentionOf(
  store: Store,
  projectId: number,
  form: ProjectPageOptions["retention"],
) {
  const [saved, bytes] = await Promise.all([
    form === undefined ? getRetentionPolicy(store, projectId) : null,
    getProjectBytes(store, [projectId]),
  ]);
  const policy = form === undefined ? saved : form.policy ?? null;
  return {
    values: form?.values ?? valuesOf(saved!),
    plan: policy === null ? null : await planRetention(store, { projectId, policy }),
    preview: form?.policy !== undefined,
    error: form?.error,
    storedBytes: bytes.get(projectId) ?? 0,
  };
}

/** The versions of releases by id (a deleted one is left out). */
async function versionsOf(store: Store, ids: number[]): Promise<Map<number, string>> {
  const releases = await Promise.all(ids.map((id) => getRelease(store, id)));
  return new Map(
    releases.flatMap((release) => release === null ? [] : [[release.id, release.version]]),
  );
}

/** The project's rollout, whether it is in force, and the versions it names. */
async function rolloutOf(
  store: Store,
  { rollout, view }: { rollout: Rollout | null; view: LatestView },
) {
  const versions = await versionsOf(
    store,
    rollout === null ? [] : [rollout.release_id, rollout.previous_id],
  );
  const running = view.rollout !== null && !view.rollout.record.halted;
  return {
    rollout,
    live: view.rollout !== null,
    // The same offer the client API places clients by (and the releases card's sentence).
    percentageNow: running ? offerAt(view, Date.now()).percentage : undefined,
    versions,
  };
}
