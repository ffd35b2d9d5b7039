/** The upload page the dashboard's "Upload a release" opens: choose the project, then the file. */
import type { Project } from "../../src/projects/types.ts";
import type { UploadValues } from "../forms_upload.ts";
import type { FormError } from "../types.ts";
import { FieldError, invalidProps } from "./components.tsx";
import { Layout, type PageContext } from "./layout.tsx";
import { can } from "../roles.ts";
import { UploadFormBody } from "./upload_form.tsx";

export interface UploadPageProps {
  ctx: PageContext;
  /** Active projects to choose from, by name. */
  projects: Project[];
  /** The chosen project's slug (empty: none yet). */
  project: string;
  maxUploadBytes: number;
  upload: UploadValues;
  uploadError?: FormError | null;
}

export function UploadPage(props: UploadPageProps) {
  const { ctx, projects, project, uploadError } = props;
  return (
    <Layout ctx={ctx} title="Upload a release" nav="projects">
      <h1>Upload a release</h1>
      {!can(ctx.role, "POST /admin/upload")
        ? (
          <p class="lead" data-upload-refused>
            Your account is a{" "}
            {ctx.role}: it cannot upload releases. Ask an admin, or a publisher (who uploads on a
            project's page).
          </p>
        )
        : projects.length === 0
        ? (
          <p class="lead" data-no-projects>
            A release belongs to a project, and there is no active project yet.{" "}
            <a href="/admin/projects?new=1#new-project">Create a project</a> first.
          </p>
        )
        : (
          <section class="card" id="upload" aria-labelledby="upload-title">
            <h2 id="upload-title">The release</h2>
            <UploadFormBody
              ctx={ctx}
              action="/admin/upload"
              maxUploadBytes={props.maxUploadBytes}
              upload={props.upload}
              uploadError={uploadError}
            >
              <div class="field">
                <label for="upload-project">Project</label>
                <select
                  id="upload-project"
                  name="project"
                  required
                  {...invalidProps(uploadError, "project", "upload-project")}
                >
                  <option value="" selected={project === ""}>Choose a project…</option>
                  {projects.map((p) => (
                    <option value={p.slug} selected={p.slug === project}>
                      {p.name} ({p.slug})
                    </option>
                  ))}
                </select>
                <FieldError error={uploadError} field="project" id="upload-project" />
              </div>
            </UploadFormBody>
          </section>
        )}
    </Layout>
  );
}
