import type { Project } from "../../src/projects/types.ts";
import type { ListPage } from "../listing.ts";
import type { ProjectFormValues } from "../forms_project.ts";
import type { FormError } from "../types.ts";
import {
  DataTable,
  FormErrorSummary,
  IfCan,
  ListPager,
  PageHead,
  SearchBox,
  StateBadge,
  TagList,
  Time,
} from "./components.tsx";
import { can } from "../roles.ts";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";
import { ProjectFields } from "./project_fields.tsx";

export interface ProjectRow {
  project: Project;
  latestVersion: string | null;
  /** The later of the project's last change and its newest release's upload. */
  updatedAt: string;
}

/**
 * The create form comes first, folded unless it is wanted (no projects yet,
 * `?new=1`, or it was sent back with an error), so it is never below a long list.
 */
export function ProjectsPage(
  { ctx, list, total, active, values, error, openForm }: {
    ctx: PageContext;
    list: ListPage<ProjectRow>;
    total: number;
    active: number;
    values: ProjectFormValues;
    error?: FormError | null;
    openForm: boolean;
  },
) {
  return (
    <Layout ctx={ctx} title="Projects" nav="projects">
      <PageHead title="Projects" />
      <IfCan ctx={ctx} route="POST /admin/projects">
        <details
          class="card create-card"
          id="new-project"
          open={openForm || !!error || total === 0}
        >
          <summary>
            <h2>New project</h2>
          </summary>
          <FormErrorSummary error={error} />
          <form method="post" action="/admin/projects" class="stack">
            <CsrfInput token={ctx.csrfToken} />
            <ProjectFields
              idPrefix="project"
              values={values}
              error={error}
              tagsHint="Keys with tag scopes use them."
            />
            <button type="submit" class="button button-primary">Create project</button>
          </form>
        </details>
      </IfCan>

      <section class="card" id="project-list" aria-labelledby="project-list-title">
        <h2 id="project-list-title">All projects</h2>
        <p class="muted">{active} active, {total - active} archived</p>
        {total > 0 && (
          <SearchBox
            action="/admin/projects#project-list"
            q={list.q}
            label="Search projects"
            placeholder="Name, slug or tag"
          />
        )}
        {total === 0
          ? (
            <p>
              No projects yet.
              {can(ctx.role, "POST /admin/projects") ? " Create the first one above." : ""}
            </p>
          )
          : list.rows.length > 0 && (
            <DataTable
              columns={["Name", "Slug", "Tags", "Latest version", "State", "Updated"]}
            >
              {list.rows.map(({ project, latestVersion, updatedAt }) => (
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
                    <Time iso={updatedAt} />
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        <ListPager
          list={list}
          total={total}
          noun="projects"
          newerLabel="Previous"
          olderLabel="Next"
        />
      </section>
    </Layout>
  );
}
