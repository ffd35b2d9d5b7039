import {
  DESCRIPTION_MAX_LENGTH,
  NAME_MAX_LENGTH,
  RELEASE_NOTES_MAX_LENGTH,
  VERSION_MAX_LENGTH,
} from "../../src/lib/limits.ts";
import type { Project, Release } from "../../src/store/mod.ts";
import { humanBytes } from "../format.ts";
import type { FormError } from "../types.ts";
import {
  DataTable,
  FormErrorSummary,
  InputField,
  PostButton,
  StateBadge,
  TagList,
  TextAreaField,
  Time,
} from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export interface ProjectEditValues {
  name: string;
  description: string;
  tags: string;
}

export interface UploadValues {
  version: string;
  build: string;
  release_notes: string;
}

export const EMPTY_UPLOAD_FORM: UploadValues = { version: "", build: "", release_notes: "" };

export interface ProjectPageProps {
  ctx: PageContext;
  project: Project;
  releases: Release[];
  downloads: Map<number, number>;
  maxUploadBytes: number;
  edit: ProjectEditValues;
  editError?: FormError | null;
  upload: UploadValues;
  uploadError?: FormError | null;
}

export function editValuesOf(project: Project): ProjectEditValues {
  return { name: project.name, description: project.description, tags: project.tags.join(", ") };
}

export function ProjectPage(props: ProjectPageProps) {
  const { ctx, project } = props;
  return (
    <Layout ctx={ctx} title={project.name} nav="projects">
      <p class="breadcrumb">
        <a href="/admin/projects">Projects</a> /
      </p>
      <div class="page-head">
        <h1>
          {project.name} <StateBadge state={project.state} />
        </h1>
        <code class="slug">{project.slug}</code>
      </div>
      {project.description && <p class="lead">{project.description}</p>}
      <TagList tags={project.tags} />
      <UploadForm {...props} />
      <ReleasesTable {...props} />
      <EditForm {...props} />
    </Layout>
  );
}

function UploadForm({ ctx, project, maxUploadBytes, upload, uploadError }: ProjectPageProps) {
  return (
    <section class="card" id="upload" aria-labelledby="upload-title">
      <h2 id="upload-title">Upload a release</h2>
      <FormErrorSummary error={uploadError} />
      <form
        method="post"
        action={`/admin/projects/${project.slug}/releases`}
        enctype="multipart/form-data"
        class="stack"
        data-upload
        data-max-bytes={String(maxUploadBytes)}
      >
        {/* First in the form, so the token arrives before the file bytes. */}
        <CsrfInput token={ctx.csrfToken} />
        <div class="field-row">
          <InputField
            id="release-version"
            name="version"
            label="Version"
            value={upload.version}
            error={uploadError}
            required
            maxlength={VERSION_MAX_LENGTH}
            autocapitalize="none"
            spellcheck={false}
          />
          <InputField
            id="release-build"
            name="build"
            label="Build"
            optional="optional"
            value={upload.build}
            error={uploadError}
            maxlength={VERSION_MAX_LENGTH}
            autocapitalize="none"
            spellcheck={false}
          />
        </div>
        <TextAreaField
          id="release-notes"
          name="release_notes"
          label="Release notes"
          optional="optional"
          value={upload.release_notes}
          error={uploadError}
          rows={4}
          maxlength={RELEASE_NOTES_MAX_LENGTH}
        />
        <InputField
          id="release-file"
          name="file"
          label="File"
          type="file"
          error={uploadError}
          required
          hint={
            <>Up to {humanBytes(maxUploadBytes)}. Size and SHA-256 are computed by the service.</>
          }
        />
        <div class="upload-progress" data-upload-progress hidden>
          <progress max={100} value={0} aria-labelledby="upload-status"></progress>
          <output id="upload-status" data-upload-status aria-live="polite"></output>
        </div>
        <div class="actions">
          <button type="submit" class="button button-primary" data-upload-submit>
            Upload release
          </button>
          <button type="button" class="button" data-upload-cancel hidden>Cancel upload</button>
        </div>
      </form>
    </section>
  );
}

function ReleasesTable({ ctx, releases, downloads }: ProjectPageProps) {
  return (
    <section class="card" id="releases" aria-labelledby="releases-title">
      <h2 id="releases-title">Releases</h2>
      {releases.length === 0 ? <p class="muted">No releases yet.</p> : (
        <DataTable
          columns={["Version", "File", "Size", "SHA-256", "Created", "State", "Downloads"]}
          actions
        >
          {releases.map((release) => (
            <tr data-release-id={String(release.id)} class={`state-${release.state}`}>
              <td data-label="Version">
                <strong>{release.version}</strong>
                {release.build && <span class="muted">build {release.build}</span>}
                <span class="muted">id {release.id}</span>
              </td>
              <td data-label="File" class="break">
                {release.filename}
                <span class="muted">{release.content_type}</span>
              </td>
              <td data-label="Size" title={`${release.size_bytes} bytes`}>
                {humanBytes(release.size_bytes)}
              </td>
              <td data-label="SHA-256">
                <code class="hash">{release.checksum_sha256}</code>
              </td>
              <td data-label="Created">
                <Time iso={release.created_at} />
              </td>
              <td data-label="State">
                <StateBadge state={release.state} />
              </td>
              <td data-label="Downloads">{String(downloads.get(release.id) ?? 0)}</td>
              <td data-label="Actions">
                <PostButton
                  action={`/admin/releases/${release.id}/${
                    release.state === "active" ? "archive" : "activate"
                  }`}
                  csrfToken={ctx.csrfToken}
                  label={release.state === "active" ? "Archive" : "Activate"}
                />
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      {releases.some((release) => release.release_notes) && (
        <details class="release-notes">
          <summary>Release notes</summary>
          {releases.filter((release) => release.release_notes).map((release) => (
            <article>
              <h3>{release.version}</h3>
              <p class="pre">{release.release_notes}</p>
            </article>
          ))}
        </details>
      )}
    </section>
  );
}

function EditForm({ ctx, project, edit, editError }: ProjectPageProps) {
  const active = project.state === "active";
  return (
    <section class="card" id="settings" aria-labelledby="settings-title">
      <h2 id="settings-title">Project settings</h2>
      <FormErrorSummary error={editError} />
      <form method="post" action={`/admin/projects/${project.slug}`} class="stack">
        <CsrfInput token={ctx.csrfToken} />
        <InputField
          id="edit-name"
          name="name"
          label="Name"
          value={edit.name}
          error={editError}
          required
          maxlength={NAME_MAX_LENGTH}
        />
        <TextAreaField
          id="edit-description"
          name="description"
          label="Description"
          value={edit.description}
          error={editError}
          rows={3}
          maxlength={DESCRIPTION_MAX_LENGTH}
        />
        <InputField
          id="edit-tags"
          name="tags"
          label="Tags"
          value={edit.tags}
          error={editError}
          autocapitalize="none"
          hint="Comma-separated. Changes apply to API keys with tag scopes at once."
        />
        <p class="hint">
          The slug <code>{project.slug}</code> never changes.
        </p>
        <button type="submit" class="button button-primary">Save changes</button>
      </form>
      <div class="danger-zone">
        <h3>{active ? "Archive project" : "Re-activate project"}</h3>
        <p class="hint">
          {active
            ? "An archived project and its releases disappear from the client API. Nothing is deleted."
            : "The project and its active releases become visible to API keys again."}
        </p>
        <PostButton
          action={`/admin/projects/${project.slug}/${active ? "archive" : "activate"}`}
          csrfToken={ctx.csrfToken}
          label={active ? "Archive project" : "Activate project"}
          buttonClass="button"
        />
      </div>
    </section>
  );
}
