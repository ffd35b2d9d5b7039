/** Loading a project for its page, and rendering that page (also with form errors). */
import type { Store } from "../../src/kv/store.ts";
import { HTTPException } from "hono/http-exception";
import { isSlug } from "../../src/lib/limits.ts";
import { adoptionDay, getAdoption } from "../../src/reports/adoption.ts";
import { getProjectBytes, getProjectReleaseCount } from "../../src/store/aggregates.ts";
import { getDeletedDownloads } from "../../src/store/deletes.ts";
import { getProjectDeliveryMonth, utcMonth } from "../../src/webhooks/delivery_records.ts";
import { getProjectVersioned } from "../../src/store/edits.ts";
import { getLatestView, type LatestView } from "../../src/store/latest_view.ts";
import { getProjectBySlug } from "../../src/store/projects.ts";
import {
  duplicateActiveVersions,
  getDownloadCounts,
  getLatestChoice,
  getRelease,
  listReleasesPage,
} from "../../src/store/releases.ts";
import { getRetentionPolicy } from "../../src/store/retention.ts";
import { getVelopackSettings } from "../../src/store/velopack.ts";
import { getRollout } from "../../src/store/rollouts.ts";
import { getDailyDownloads, getRecentDownloadCountsByWindow } from "../../src/store/stats.ts";
import type { Project, Release, RetentionPolicy, Rollout } from "../../src/store/types.ts";
import { type AdminContext, pageContext } from "../context.ts";
import { cursorListPage, PAGE_SIZE, SEARCH_SCAN, searchOf } from "../listing.ts";
import type { FormError, RouteDeps } from "../types.ts";
import { chartRange } from "../views/chart.tsx";
import { editValuesOf, type ProjectEditValues } from "../forms_project.ts";
import { EMPTY_UPLOAD_FORM, type UploadValues } from "../forms_upload.ts";
import { ProjectPage } from "../views/project.tsx";
import { latestNotes } from "../../src/publishing/latest.ts";
import { offerAt } from "../../src/rollouts/membership.ts";
import { planRetention } from "../../src/lifecycle/retention.ts";
import type { RetentionValues } from "../views/retention.tsx";
import { EMPTY_ROLLOUT_FORM, type RolloutValues } from "../forms_rollout.ts";
import type { SafetyValues } from "../views/release_safety.tsx";
import { releaseSafetyOf } from "./release_safety.tsx";

export async function loadProject(store: Store, slug: string): Promise<Project> {
  const project = isSlug(slug) ? await getProjectBySlug(store, slug) : null;
  if (project === null) throw new HTTPException(404, { message: `There is no project "${slug}".` });
  return project;
}

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
}

export async function renderProjectPage(
  c: AdminContext,
  deps: RouteDeps,
  { project, status = 200, ...form }: ProjectPageOptions,
): Promise<Response> {
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
      limit: PAGE_SIZE,
      cursor: query,
      maxScan: match ? SEARCH_SCAN : PAGE_SIZE + 1,
      match,
    }),
    getProjectReleaseCount(c.var.store, project.id),
    getDailyDownloads(c.var.store, ["project", project.id], { days }),
    getProjectVersioned(c.var.store, project.id),
    getDeletedDownloads(c.var.store, project.id),
    getLatestChoice(c.var.store, project.id),
    retentionOf(c.var.store, project.id, form.retention),
    rolloutOf(c.var.store, { rollout: rolloutRecord, view }),
    getAdoption(c.var.store, project.id, today),
    releaseSafetyOf(c.var.store, { project, rollout: rolloutRecord, form: form.safety }),
    getProjectDeliveryMonth(c.var.store, project.id, utcMonth(new Date())),
    form.velopack ?? getVelopackSettings(c.var.store, project.id)
      .then((settings) => ({ value: String(settings.deltas_kept), error: undefined })),
  ]);
  // The latest pointer's release (getLatestRelease reads the same view).
  const latest = view.release;
  const releases = cursorListPage(page, {
    query,
    q,
    total: releaseCount,
    path: `/admin/projects/${project.slug}`,
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
  return c.html(
    <ProjectPage
      ctx={pageContext(c, deps)}
      project={project}
      releases={releases}
      releaseCount={releaseCount}
      latestId={latest?.state === "active" ? latest.id : null}
      latestNotes={latestNotes(latest === null ? releases.rows : [latest, ...releases.rows], {
        offer: offerAt(view, Date.now()),
        choice,
      })}
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
      retention={retention}
      velopack={velopack}
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
