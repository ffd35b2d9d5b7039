import type { Project } from "../../src/store/mod.ts";
import type { FormError } from "../types.ts";
import {
  FieldError,
  FormErrorSummary,
  invalidProps,
  StateBadge,
  TagList,
  Time,
} from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export interface ProjectRow {
  project: Project;
  latestVersion: string | null;
}

export interface ProjectFormValues {
  name: string;
  slug: string;
  description: string;
  tags: string;
}

export const EMPTY_PROJECT_FORM: ProjectFormValues = {
  name: "",
  slug: "",
  description: "",
  tags: "",
};

export function ProjectsPage(
  { ctx, rows, values, error }: {
    ctx: PageContext;
    rows: ProjectRow[];
    values: ProjectFormValues;
    error?: FormError | null;
  },
) {
  const active = rows.filter((row) => row.project.state === "active").length;
  return (
    <Layout ctx={ctx} title="Projects" nav="projects">
      <div class="page-head">
        <h1>Projects</h1>
        <a class="button button-primary" href="#new-project">New project</a>
      </div>
      <section class="card">
        <h2>All projects</h2>
        <p class="muted">{active} active, {rows.length - active} archived</p>
        {rows.length === 0
          ? <p>No projects yet. Create the first one below.</p>
          : (
            <div class="table-wrap">
              <table class="data-table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Slug</th>
                    <th scope="col">Tags</th>
                    <th scope="col">Latest version</th>
                    <th scope="col">State</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map(({ project, latestVersion }) => (
                    <tr data-project-slug={project.slug} class={`state-${project.state}`}>
                      <td data-label="Name">
                        <a href={`/admin/projects/${project.slug}`}>
                          <strong>{project.name}</strong>
                        </a>
                      </td>
                      <td data-label="Slug">
                        <code>{project.slug}</code>
                      </td>
                      <td data-label="Tags">
                        <TagList tags={project.tags} />
                      </td>
                      <td data-label="Latest version">
                        {latestVersion ?? <span class="muted">no active release</span>}
                      </td>
                      <td data-label="State">
                        <StateBadge state={project.state} />
                      </td>
                      <td data-label="Updated">
                        <Time iso={project.updated_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
      </section>

      <section class="card" id="new-project" aria-labelledby="new-project-title">
        <h2 id="new-project-title">New project</h2>
        <FormErrorSummary error={error} />
        <form method="post" action="/admin/projects" class="stack">
          <CsrfInput token={ctx.csrfToken} />
          <div class="field">
            <label for="project-name">Name</label>
            <input
              id="project-name"
              name="name"
              type="text"
              value={values.name}
              required
              maxlength={200}
              {...invalidProps(error, "name", "project-name")}
            />
            <FieldError error={error} field="name" id="project-name" />
          </div>
          <div class="field">
            <label for="project-slug">Slug</label>
            <input
              id="project-slug"
              name="slug"
              type="text"
              value={values.slug}
              pattern="[a-z0-9\-]{1,64}"
              maxlength={64}
              autocapitalize="none"
              spellcheck={false}
              aria-describedby="project-slug-hint"
              {...invalidProps(error, "slug", "project-slug")}
            />
            <p class="hint" id="project-slug-hint">
              Lowercase letters, digits and -. Used in URLs and never changes. Leave empty to derive
              it from the name.
            </p>
            <FieldError error={error} field="slug" id="project-slug" />
          </div>
          <div class="field">
            <label for="project-description">Description</label>
            <textarea
              id="project-description"
              name="description"
              rows={3}
              maxlength={5000}
              {...invalidProps(error, "description", "project-description")}
            >
              {values.description}
            </textarea>
            <FieldError error={error} field="description" id="project-description" />
          </div>
          <div class="field">
            <label for="project-tags">Tags</label>
            <input
              id="project-tags"
              name="tags"
              type="text"
              value={values.tags}
              autocapitalize="none"
              aria-describedby="project-tags-hint"
              {...invalidProps(error, "tags", "project-tags")}
            />
            <p class="hint" id="project-tags-hint">
              Comma-separated, e.g. <code>desktop, stable</code>. Keys with tag scopes use them.
            </p>
            <FieldError error={error} field="tags" id="project-tags" />
          </div>
          <button type="submit" class="button button-primary">Create project</button>
        </form>
      </section>
    </Layout>
  );
}
