/** Projects: list, create, edit, archive and re-activate. */
import type { Hono } from "hono";
import {
  createProject,
  getCounts,
  getLatestRelease,
  listProjectsPage,
  parseList,
  type Project,
  setProjectState,
  updateProject,
  ValidationError,
} from "../../src/store/mod.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { formErrorOf } from "../forms.ts";
import {
  EMPTY_PROJECT_FORM,
  projectEditValues,
  type ProjectFormValues,
  projectFormValues,
} from "../forms_project.ts";
import { cursorListPage, PAGE_SIZE, SEARCH_SCAN, searchOf } from "../listing.ts";
import type { AdminEnv, FormError, ServiceDeps } from "../types.ts";
import { type ProjectRow, ProjectsPage } from "../views/projects.tsx";
import { loadProject, renderProjectPage } from "./project_page.tsx";

export function addProjectRoutes(admin: Hono<AdminEnv>, deps: ServiceDeps): void {
  const { kv } = deps;

  /** The projects page: one page of the list (active first, then by name) and the create form. */
  async function renderProjectsPage(
    c: AdminContext,
    form: { values: ProjectFormValues; error?: FormError; openForm?: boolean },
  ): Promise<Response> {
    const query = form.error ? {} : c.req.query();
    const { q, match } = searchOf(
      query,
      (project: Project) => [project.name, project.slug, ...project.tags],
    );
    const [page, counts] = await Promise.all([
      listProjectsPage(kv, {
        limit: PAGE_SIZE,
        cursor: query,
        maxScan: match ? SEARCH_SCAN : PAGE_SIZE + 1,
        match,
      }),
      getCounts(kv),
    ]);
    const active = counts.projects.active ?? 0;
    const total = active + (counts.projects.archived ?? 0);
    const list = cursorListPage(page, {
      query,
      q,
      total,
      path: "/admin/projects",
      anchor: "#project-list",
    });
    const rows: ProjectRow[] = await Promise.all(list.rows.map(async (project) => ({
      project,
      latestVersion: (await getLatestRelease(kv, project.id))?.version ?? null,
    })));
    return c.html(
      <ProjectsPage
        ctx={pageContext(c, deps)}
        list={{ ...list, rows }}
        total={total}
        active={active}
        values={form.values}
        error={form.error}
        openForm={form.openForm ?? false}
      />,
      form.error ? 400 : 200,
    );
  }

  admin.get(
    "/projects",
    (c) =>
      renderProjectsPage(c, {
        values: EMPTY_PROJECT_FORM,
        openForm: c.req.query("new") !== undefined,
      }),
  );

  admin.post("/projects", async (c) => {
    const form = c.get("form");
    const values = projectFormValues(form);
    try {
      const project = await createProject(kv, {
        name: values.name,
        slug: values.slug,
        description: values.description,
        tags: parseList(values.tags),
      });
      await audit(c, deps, {
        action: "project.create",
        target: `project ${project.slug}`,
        details: projectDetails(project),
      });
      return redirectWithFlash(c, deps, {
        location: `/admin/projects/${project.slug}`,
        kind: "success",
        text: `Project "${project.name}" was created.`,
      });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderProjectsPage(c, { values, error: formErrorOf(error) });
    }
  });

  admin.get("/projects/:slug", async (c) => {
    const project = await loadProject(deps, c.req.param("slug"));
    return await renderProjectPage(c, deps, { project });
  });

  admin.post("/projects/:slug", async (c) => {
    const project = await loadProject(deps, c.req.param("slug"));
    const form = c.get("form");
    const edit = projectEditValues(form);
    try {
      const updated = await updateProject(kv, project.id, {
        name: edit.name,
        description: edit.description,
        tags: parseList(edit.tags),
      });
      await audit(c, deps, {
        action: "project.update",
        target: `project ${updated.slug}`,
        details: projectDetails(updated),
      });
      return redirectWithFlash(c, deps, {
        location: `/admin/projects/${updated.slug}`,
        kind: "success",
        text: "The project was saved.",
      });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderProjectPage(c, deps, {
        project,
        edit,
        editError: formErrorOf(error),
        status: 400,
      });
    }
  });

  for (const [action, state] of [["archive", "archived"], ["activate", "active"]] as const) {
    admin.post(`/projects/:slug/${action}`, async (c) => {
      const project = await loadProject(deps, c.req.param("slug"));
      await setProjectState(kv, project.id, state);
      await audit(c, deps, { action: `project.${action}`, target: `project ${project.slug}` });
      return redirectWithFlash(c, deps, {
        location: `/admin/projects/${project.slug}`,
        kind: "success",
        text: state === "archived"
          ? `Project "${project.name}" was archived: the client API no longer shows it.`
          : `Project "${project.name}" is active again.`,
      });
    });
  }
}

/** The audit details of a created or edited project. */
function projectDetails(project: Project): string {
  return `name "${project.name}"; tags ${project.tags.join(", ") || "none"}`;
}
