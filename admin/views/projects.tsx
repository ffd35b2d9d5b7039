import { DESCRIPTION_MAX_LENGTH, NAME_MAX_LENGTH, SLUG_MAX_LENGTH } from "../../src/lib/limits.ts";
import type { Project } from "../../src/store/mod.ts";
import type { FormError } from "../types.ts";
import {
  DataTable,
  FormErrorSummary,
  InputField,
  StateBadge,
  TagList,
  TextAreaField,
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
        {rows.length === 0 ? <p>No projects yet. Create the first one below.</p> : (
          <DataTable
            columns={["Name", "Slug", "Tags", "Latest version", "State", "Updated"]}
          >
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
          </DataTable>
        )}
      </section>

      <section class="card" id="new-project" aria-labelledby="new-project-title">
        <h2 id="new-project-title">New project</h2>
        <FormErrorSummary error={error} />
        <form method="post" action="/admin/projects" class="stack">
          <CsrfInput token={ctx.csrfToken} />
          <InputField
            id="project-name"
            name="name"
            label="Name"
            value={values.name}
            error={error}
            required
            maxlength={NAME_MAX_LENGTH}
          />
          <InputField
            id="project-slug"
            name="slug"
            label="Slug"
            value={values.slug}
            error={error}
            pattern="[a-z0-9\-]{1,64}"
            maxlength={SLUG_MAX_LENGTH}
            autocapitalize="none"
            spellcheck={false}
            hint="Lowercase letters, digits and -. Used in URLs and never changes. Leave empty to derive it from the name."
          />
          <TextAreaField
            id="project-description"
            name="description"
            label="Description"
            value={values.description}
            error={error}
            rows={3}
            maxlength={DESCRIPTION_MAX_LENGTH}
          />
          <InputField
            id="project-tags"
            name="tags"
            label="Tags"
            value={values.tags}
            error={error}
            autocapitalize="none"
            hint={
              <>
                Comma-separated, e.g. <code>desktop, stable</code>. Keys with tag scopes use them.
              </>
            }
          />
          <button type="submit" class="button button-primary">Create project</button>
        </form>
      </section>
    </Layout>
  );
}
