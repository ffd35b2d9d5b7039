/** Loading a project for its page, and rendering that page (also with form errors). */
import { HTTPException } from "hono/http-exception";
import { isSlug } from "../../src/lib/limits.ts";
import {
  duplicateActiveVersions,
  getDailyDownloads,
  getDownloadCounts,
  getLatestChoice,
  getLatestRelease,
  getProjectBySlug,
  getRecentDownloadCountsByWindow,
  listReleasesByProject,
  type Project,
} from "../../src/store/mod.ts";
import { type AdminContext, pageContext } from "../context.ts";
import { listPage } from "../listing.ts";
import type { FormError, ServiceDeps } from "../types.ts";
import { chartRange } from "../views/chart.tsx";
import { editValuesOf, type ProjectEditValues } from "../forms_project.ts";
import { EMPTY_UPLOAD_FORM, type UploadValues } from "../forms_upload.ts";
import { ProjectPage } from "../views/project.tsx";
import { latestNotes } from "../../src/publishing/latest.ts";

export async function loadProject(deps: ServiceDeps, slug: string): Promise<Project> {
  const project = isSlug(slug) ? await getProjectBySlug(deps.kv, slug) : null;
  if (project === null) throw new HTTPException(404, { message: `There is no project "${slug}".` });
  return project;
}

export async function renderProjectPage(
  c: AdminContext,
  deps: ServiceDeps,
  project: Project,
  form: {
    edit?: ProjectEditValues;
    editError?: FormError;
    upload?: UploadValues;
    uploadError?: FormError;
  } = {},
  status: 200 | 400 | 403 | 413 | 503 | 507 = 200,
): Promise<Response> {
  const { kv } = deps;
  // A form sent back shows the first page: the query belongs to the page the form was on.
  const query = c.req.method === "GET" ? c.req.query() : {};
  const days = chartRange(query.days);
  const [all, latest, series, choice] = await Promise.all([
    listReleasesByProject(kv, project.id),
    getLatestRelease(kv, project.id),
    getDailyDownloads(kv, ["project", project.id], days),
    getLatestChoice(kv, project.id),
  ]);
  const releases = listPage(
    all,
    query,
    (release) => [release.version, release.build, release.filename],
    `/admin/projects/${project.slug}`,
    "#releases",
  );
  const ids = releases.rows.map((release) => release.id);
  const [totals, recent] = await Promise.all([
    getDownloadCounts(kv, ids),
    getRecentDownloadCountsByWindow(kv, ids, [30, 90]),
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
      releaseCount={all.length}
      latestId={latest?.state === "active" ? latest.id : null}
      latestNotes={latestNotes(all, { latestId: latest?.id ?? null, choice })}
      duplicateVersions={duplicateActiveVersions(all)}
      downloads={downloads}
      chart={{ series, days }}
      maxUploadBytes={deps.config.maxUploadBytes}
      edit={form.edit ?? editValuesOf(project)}
      editError={form.editError}
      upload={form.upload ?? EMPTY_UPLOAD_FORM}
      uploadError={form.uploadError}
    />,
    status,
  );
}
