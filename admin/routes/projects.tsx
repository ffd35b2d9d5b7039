/** Projects: list, create, edit, archive and re-activate. */
import type { Hono } from "hono";
import {
  createProject,
  getLatestRelease,
  listProjects,
  parseList,
  type Project,
  setProjectState,
  updateProject,
  ValidationError,
} from "../../src/store/mod.ts";
import { audit, pageContext, redirectWithFlash } from "../context.ts";
import { field, formErrorOf, listField } from "../forms.ts";
import type { AdminEnv, AppDeps } from "../types.ts";
import {
  EMPTY_PROJECT_FORM,
  type ProjectFormValues,
  type ProjectRow,
  ProjectsPage,
} from "../views/projects.tsx";
import { loadProject, renderProjectPage } from "./project_page.tsx";

export function addProjectRoutes(admin: Hono<AdminEnv>, deps: AppDeps): void {
  const { kv } = deps;

  async function projectRows(): Promise<ProjectRow[]> {
    // Active projects first, then by name (a sorted copy: the listed array is shared).
    const projects = [...await listProjects(kv)].sort((a, b) =>
      a.state === b.state ? a.name.localeCompare(b.name) : a.state === "active" ? -1 : 1
    );
    return await Promise.all(projects.map(async (project) => ({
      project,
      latestVersion: (await getLatestRelease(kv, project.id))?.version ?? null,
    })));
  }

  admin.get("/projects", async (c) =>
    c.html(
      <ProjectsPage
        ctx={pageContext(c, deps)}
        rows={await projectRows()}
        values={EMPTY_PROJECT_FORM}
      />,
    ));

  admin.post("/projects", async (c) => {
    const form = c.get("form");
    const values: ProjectFormValues = {
      name: field(form, "name"),
      slug: field(form, "slug"),
      description: field(form, "description"),
      tags: listField(form, "tags"),
    };
    try {
      const project = await createProject(kv, {
        name: values.name,
        slug: values.slug,
        description: values.description,
        tags: parseList(values.tags),
      });
      await audit(c, deps, "project.create", `project ${project.slug}`, projectDetails(project));
      return redirectWithFlash(c, deps, `/admin/projects/${project.slug}`, {
        kind: "success",
        text: `Project "${project.name}" was created.`,
      });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return c.html(
        <ProjectsPage
          ctx={pageContext(c, deps)}
          rows={await projectRows()}
          values={values}
          error={formErrorOf(error)}
        />,
        400,
      );
    }
  });

  admin.get("/projects/:slug", async (c) => {
    const project = await loadProject(deps, c.req.param("slug"));
    return await renderProjectPage(c, deps, project);
  });

  admin.post("/projects/:slug", async (c) => {
    const project = await loadProject(deps, c.req.param("slug"));
    const form = c.get("form");
    const edit = {
      name: field(form, "name"),
      description: field(form, "description"),
      tags: listField(form, "tags"),
    };
    try {
      const updated = await updateProject(kv, project.id, {
        name: edit.name,
        description: edit.description,
        tags: parseList(edit.tags),
      });
      await audit(c, deps, "project.update", `project ${updated.slug}`, projectDetails(updated));
      return redirectWithFlash(c, deps, `/admin/projects/${updated.slug}`, {
        kind: "success",
        text: "The project was saved.",
      });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderProjectPage(c, deps, project, {
        edit,
        editError: formErrorOf(error),
      }, 400);
    }
  });

  for (const [action, state] of [["archive", "archived"], ["activate", "active"]] as const) {
    admin.post(`/projects/:slug/${action}`, async (c) => {
      const project = await loadProject(deps, c.req.param("slug"));
      await setProjectState(kv, project.id, state);
      await audit(c, deps, `project.${action}`, `project ${project.slug}`);
      return redirectWithFlash(c, deps, `/admin/projects/${project.slug}`, {
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
