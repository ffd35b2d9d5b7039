/** Projects: list, create, edit, archive and re-activate. */
import type { Hono } from "hono";
import { getCounts } from "../../src/projects/aggregates.ts";
import { ProjectNotEmptyError } from "../../src/lifecycle/delete_records.ts";
import { editProject } from "../../src/edits/edits.ts";
import { ValidationError } from "../../src/kv/errors.ts";
import {
  createProject,
  listProjectsPage,
  searchProjects,
  setProjectState,
} from "../../src/projects/projects.ts";
import { getLatestRelease, getNewestReleaseTimes } from "../../src/releases/releases.ts";
import { setRetentionPolicy } from "../../src/lifecycle/retention_records.ts";
import { isRetentionOff, parseRetentionPolicy } from "../../src/projects/retention_policy.ts";
import type { Project } from "../../src/projects/types.ts";
import { parseList } from "../../src/projects/validate.ts";
import { parseDeltasKept, setVelopackSettings } from "../../src/velopack/settings.ts";
import { deleteProject } from "../../src/lifecycle/delete.ts";
import { describeChanges } from "../audit_changes.ts";
import { field } from "../forms.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { reshowRefusedEdit } from "../edit_refusal.ts";
import { formErrorOf } from "../forms.ts";
import {
  EMPTY_PROJECT_FORM,
  projectEditValues,
  type ProjectFormValues,
  projectFormValues,
} from "../forms_project.ts";
import { cursorListPage, listPage, PAGE_SIZE, searchOf } from "../listing.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import { type ProjectRow, ProjectsPage } from "../views/projects.tsx";
import { type ProjectTab, projectTabPath } from "../views/project.tsx";
import { loadProject, renderProjectPage } from "./project_page.tsx";

export function addProjectRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  /** The projects page: one page of the list (active first, then by name) and the create form. */
  async function renderProjectsPage(
    c: AdminContext,
    form: { values: ProjectFormValues; error?: FormError; openForm?: boolean },
  ): Promise<Response> {
    const query = form.error ? {} : c.req.query();
    const searchable = (project: Project) => [project.name, project.slug, ...project.tags];
    const { q, match } = searchOf(query, searchable);
    const path = "/admin/projects";
    const anchor = "#project-list";
    // A search looks through the cached project list (every match, counted, paged by number);
    // the plain list reads one page of the name index.
    const [found, page, counts] = await Promise.all([
      match ? searchProjects(c.var.store, match) : null,
      match ? null : listProjectsPage(c.var.store, {
        limit: PAGE_SIZE,
        cursor: query,
        maxScan: PAGE_SIZE + 1,
      }),
      getCounts(c.var.store),
    ]);
    const active = counts.projects.active ?? 0;
    const total = active + (counts.projects.archived ?? 0);
    const list = found !== null
      ? listPage(found, query, { searchable, path, anchor })
      : cursorListPage(page!, { query, q, total, path, anchor });
    // "Updated" moves with an upload too (the project record does not change on one).
    const uploads = await getNewestReleaseTimes(
      c.var.store,
      list.rows.map((project) => project.id),
    );
    const rows: ProjectRow[] = await Promise.all(list.rows.map(async (project) => {
      const uploaded = uploads.get(project.id) ?? null;
      return {
        project,
        latestVersion: (await getLatestRelease(c.var.store, project.id))?.version ?? null,
        updatedAt: uploaded !== null && uploaded > project.updated_at
          ? uploaded
          : project.updated_at,
      };
    }));
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
      const project = await createProject(c.var.store, {
        name: values.name,
        slug: values.slug,
        description: values.description,
        tags: parseList(values.tags),
        retention: deps.config.newProjectRetention,
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
    const project = await loadProject(c.var.store, c.req.param("slug"));
    return await renderProjectPage(c, deps, { project });
  });

  // The project's other pages (admin/views/project.tsx PROJECT_TABS).
  const tabPage = (tab: ProjectTab) => async (c: AdminContext) =>
    await renderProjectPage(c, deps, {
      project: await loadProject(c.var.store, c.req.param("slug") ?? ""),
      tab,
    });
  admin.get("/projects/:slug/releases", tabPage("releases"));
  admin.get("/projects/:slug/rollout", tabPage("rollout"));
  admin.get("/projects/:slug/feeds", tabPage("feeds"));
  admin.get("/projects/:slug/settings", tabPage("settings"));

  admin.post("/projects/:slug", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const form = c.get("form");
    const edit = projectEditValues(form);
    try {
      const { before, after: updated } = await editProject(c.var.store, project.id, {
        name: edit.name,
        description: edit.description,
        tags: parseList(edit.tags),
        expected: field(form, "expected_version"),
      });
      await audit(c, deps, {
        action: "project.update",
        target: `project ${updated.slug}`,
        details: describeChanges(before, updated, ["name", "description", "tags"]),
      });
      return redirectWithFlash(c, deps, {
        location: `/admin/projects/${updated.slug}`,
        kind: "success",
        text: "The project was saved.",
      });
    } catch (error) {
      return await reshowRefusedEdit<Project>(
        error,
        (current, refusal) =>
          renderProjectPage(c, deps, { project: current?.value ?? project, edit, ...refusal }),
      );
    }
  });

  admin.post("/projects/:slug/delete", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const typed = field(c.get("form"), "confirm_slug").trim();
    if (typed !== project.slug) {
      return await renderProjectPage(c, deps, {
        project: project,
        deleteError: {
          field: "confirm_slug",
          message: `Type the slug "${project.slug}" exactly to delete the project.`,
        },
        status: 400,
      });
    }
    let result;
    try {
      result = await deleteProject({ ...deps, store: c.var.store }, project.id);
    } catch (error) {
      if (!(error instanceof ProjectNotEmptyError)) throw error;
      const count = error.activeReleases;
      return await renderProjectPage(c, deps, {
        project: project,
        deleteError: {
          field: "confirm_slug",
          message: `The project has ${count} active ${
            count === 1 ? "release" : "releases"
          }: archive or delete ${count === 1 ? "it" : "them"} first.`,
        },
        status: 409,
      });
    }
    const { releases, leftForSweep } = result;
    await audit(c, deps, {
      action: "project.delete",
      target: `project ${project.slug}`,
      details: `id ${project.id}; name "${project.name}"; tags ${
        project.tags.join(", ") || "none"
      }; ${releases.length} archived ${releases.length === 1 ? "release" : "releases"} deleted${
        releases.length > 0
          ? ` (${releases.map((release) => `${release.id} ${release.version}`).join(", ")})`
          : ""
      }${leftForSweep.length > 0 ? `; ${leftForSweep.length} artifacts left for the sweep` : ""}`,
    });
    return redirectWithFlash(c, deps, {
      location: "/admin/projects",
      kind: "success",
      text: `Project "${project.name}" was deleted${
        releases.length > 0
          ? ` with its ${releases.length} archived ${
            releases.length === 1 ? "release" : "releases"
          }`
          : ""
      }.`,
    });
  });

  // Retention: "preview" shows what the policy in the form would delete now; "save" stores it.
  admin.post("/projects/:slug/retention", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const form = c.get("form");
    const values = {
      keep_active: field(form, "keep_active"),
      archived_max_days: field(form, "archived_max_days"),
    };
    let policy;
    try {
      policy = parseRetentionPolicy(values);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderProjectPage(c, deps, {
        project,
        retention: { values, error: formErrorOf(error) },
        status: 400,
      });
    }
    if (field(form, "action") !== "save") {
      return await renderProjectPage(c, deps, { project, retention: { values, policy } });
    }
    const before = await setRetentionPolicy(c.var.store, project.id, policy);
    await audit(c, deps, {
      action: "project.retention",
      target: `project ${project.slug}`,
      details: describeChanges(before, policy, ["keep_active", "archived_max_days"]),
    });
    return redirectWithFlash(c, deps, {
      location: `${projectTabPath(project.slug, "settings")}#retention`,
      kind: "success",
      text: isRetentionOff(policy)
        ? "Retention is off: nothing is deleted."
        : "The retention policy was saved; it runs in the background.",
    });
  });

  // Server-made deltas and patches: from how many older releases to each new one.
  admin.post("/projects/:slug/velopack", async (c) => {
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const value = field(c.get("form"), "deltas_kept");
    let deltasKept;
    try {
      deltasKept = parseDeltasKept(value);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderProjectPage(c, deps, {
        project,
        velopack: { value, error: formErrorOf(error) },
        status: 400,
      });
    }
    const before = await setVelopackSettings(c.var.store, project.id, { deltas_kept: deltasKept });
    await audit(c, deps, {
      action: "project.velopack",
      target: `project ${project.slug}`,
      details: describeChanges(before, { deltas_kept: deltasKept }, ["deltas_kept"]),
    });
    return redirectWithFlash(c, deps, {
      location: `${projectTabPath(project.slug, "feeds")}#velopack`,
      kind: "success",
      text: `Server-made deltas and patches: each new release gets one from ${deltasKept} older ${
        deltasKept === 1 ? "release" : "releases"
      }.`,
    });
  });

  for (const [action, state] of [["archive", "archived"], ["activate", "active"]] as const) {
    admin.post(`/projects/:slug/${action}`, async (c) => {
      const project = await loadProject(c.var.store, c.req.param("slug"));
      await setProjectState(c.var.store, project.id, state);
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
