/** Loading a project for its page, and rendering that page (also with form errors). */
import { HTTPException } from "hono/http-exception";
import { isSlug } from "../../src/lib/limits.ts";
import {
  getDownloadCounts,
  getProjectBySlug,
  listReleasesByProject,
  type Project,
} from "../../src/store/mod.ts";
import { type AdminContext, pageContext } from "../context.ts";
import type { AppDeps, FormError } from "../types.ts";
import {
  editValuesOf,
  EMPTY_UPLOAD_FORM,
  type ProjectEditValues,
  ProjectPage,
  type UploadValues,
} from "../views/project.tsx";

export async function loadProject(deps: AppDeps, slug: string): Promise<Project> {
  const project = isSlug(slug) ? await getProjectBySlug(deps.kv, slug) : null;
  if (project === null) throw new HTTPException(404, { message: `There is no project "${slug}".` });
  return project;
}

export async function renderProjectPage(
  c: AdminContext,
  deps: AppDeps,
  project: Project,
  form: {
    edit?: ProjectEditValues;
    editError?: FormError;
    upload?: UploadValues;
    uploadError?: FormError;
  } = {},
  status: 200 | 400 | 403 | 413 = 200,
): Promise<Response> {
  const releases = await listReleasesByProject(deps.kv, project.id);
  const downloads = await getDownloadCounts(deps.kv, releases.map((release) => release.id));
  return c.html(
    <ProjectPage
      ctx={pageContext(c, deps)}
      project={project}
      releases={releases}
      downloads={downloads}
      maxUploadBytes={deps.config.maxUploadBytes}
      edit={form.edit ?? editValuesOf(project)}
      editError={form.editError}
      upload={form.upload ?? EMPTY_UPLOAD_FORM}
      uploadError={form.uploadError}
    />,
    status,
  );
}
