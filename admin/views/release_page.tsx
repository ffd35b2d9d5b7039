/** One release: its facts, a download link, the edit form and the delete form. */
import type { DeliveryTotals } from "../../src/stats/delivery.ts";
import type { Project } from "../../src/projects/types.ts";
import type { Release } from "../../src/releases/types.ts";
import { humanBytes } from "../format.ts";
import type { ReleaseEditValues } from "../forms_upload.ts";
import type { FormError } from "../types.ts";
import {
  EditConflictNotice,
  FormErrorSummary,
  IfCan,
  InputField,
  PageHead,
  StateBadge,
  TextAreaField,
  Time,
} from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";
import { TEXT_FIELDS } from "./text_fields.ts";
import { ReleaseMarkBadges, type ReleaseMarks } from "./release_cells.tsx";

export interface ReleasePageProps {
  ctx: PageContext;
  release: Release;
  project: Project | null;
  /** The version of the stored record the edit form starts from. */
  version: string;
  /** Clients get this release as the project's latest. */
  latest: boolean;
  /** Rollout, rollback, critical and minimum-version marks. */
  marks?: ReleaseMarks;
  downloads: number;
  /** Bytes answered for its file and block map, and what whole downloads would have cost. */
  delivery?: DeliveryTotals;
  edit: ReleaseEditValues;
  editError?: FormError | null;
  /** Another admin changed the release after this form was shown: the record as it is now. */
  conflict?: Release | null;
  deleteError?: FormError | null;
  /** Other active releases of the project with the version entered. */
  duplicateOf?: number;
}

export function ReleasePage(props: ReleasePageProps) {
  const { ctx, release, project } = props;
  const projectPath = project ? `/admin/projects/${project.slug}` : "/admin/projects";
  return (
    <Layout ctx={ctx} title={`Release ${release.version}`} nav="projects">
      <p class="breadcrumb">
        <a href="/admin/projects">Projects</a> /{" "}
        <a href={project ? `${projectPath}/releases#releases` : projectPath}>
          {project?.name ?? "(deleted project)"}
        </a>{" "}
        /
      </p>
      <PageHead
        title={`Release ${release.version}`}
        badges={
          <>
            <StateBadge state={release.state} />
            {props.latest && <span class="badge badge-latest">latest</span>}
            <ReleaseMarkBadges release={release} marks={props.marks} />
          </>
        }
        slug={`id ${release.id}`}
      />
      <section class="card" id="file" aria-labelledby="file-title">
        <h2 id="file-title">File</h2>
        <dl class="facts">
          <dt>File</dt>
          <dd class="break">{release.filename}</dd>
          <dt>Type</dt>
          <dd>{release.content_type}</dd>
          <dt>Size</dt>
          <dd>{humanBytes(release.size_bytes)} ({release.size_bytes} bytes)</dd>
          <dt>SHA-256</dt>
          <dd>
            <code class="hash">{release.checksum_sha256}</code>
          </dd>
          <dt>Uploaded</dt>
          <dd>
            <Time iso={release.created_at} />
          </dd>
          <dt>Downloads</dt>
          <dd data-downloads-total>{String(props.downloads)}</dd>
          {props.delivery !== undefined && props.delivery.served > 0 && (
            <>
              <dt>Bytes sent</dt>
              <dd data-delivery>
                {humanBytes(props.delivery.served)} (whole downloads would have cost{" "}
                {humanBytes(props.delivery.full)})
              </dd>
            </>
          )}
        </dl>
        <a class="button" href={`/admin/releases/${release.id}/download`} data-download-link>
          Download the file
        </a>
        <p class="hint">Downloads from here are not counted in the statistics.</p>
      </section>
      <IfCan ctx={ctx} route="POST /admin/releases/:id">
        <EditReleaseForm {...props} />
      </IfCan>
      <IfCan ctx={ctx} route="POST /admin/releases/:id/delete">
        <DeleteReleaseForm {...props} />
      </IfCan>
    </Layout>
  );
}

function EditReleaseForm({ ctx, release, version, edit, editError, conflict }: ReleasePageProps) {
  return (
    <section class="card" id="edit" aria-labelledby="edit-title">
      <h2 id="edit-title">Correct this release</h2>
      {conflict && <ConflictNotice current={conflict} />}
      <FormErrorSummary error={editError} />
      <form method="post" action={`/admin/releases/${release.id}`} class="stack">
        <CsrfInput token={ctx.csrfToken} />
        <input type="hidden" name="expected_version" value={version} />
        <div class="field-row">
          <InputField
            id="edit-version"
            {...TEXT_FIELDS.version}
            value={edit.version}
            error={editError}
          />
          <InputField id="edit-build" {...TEXT_FIELDS.build} value={edit.build} error={editError} />
        </div>
        <TextAreaField
          id="edit-notes"
          {...TEXT_FIELDS.releaseNotes}
          value={edit.release_notes}
          error={editError}
        />
        <p class="hint">
          The file, its checksum and the upload time stay; which release is latest does not change.
        </p>
        <button type="submit" class="button button-primary">Save changes</button>
      </form>
    </section>
  );
}

/** What another admin saved meanwhile, shown above the form that still holds what was entered. */
export function ConflictNotice({ current }: { current: Release }) {
  return (
    <EditConflictNotice what="release">
      <dt>Version</dt>
      <dd data-current-version>{current.version}</dd>
      <dt>Build</dt>
      <dd>{current.build || "(none)"}</dd>
      <dt>Release notes</dt>
      <dd class="pre">{current.release_notes || "(none)"}</dd>
      <dt>State</dt>
      <dd>{current.state}</dd>
    </EditConflictNotice>
  );
}

function DeleteReleaseForm({ ctx, release, latest, deleteError }: ReleasePageProps) {
  return (
    <section class="card danger-zone" id="delete" aria-labelledby="delete-title">
      <h2 id="delete-title">Delete this release</h2>
      <FormErrorSummary error={deleteError} />
      <p class="hint">
        Removes the release and its file from storage for good. Its download count stays in the
        project's total, and the audit log keeps what was deleted.
        {latest &&
          " This is the latest release: clients will get the next newest active release instead, or none."}
      </p>
      <form method="post" action={`/admin/releases/${release.id}/delete`} class="stack">
        <CsrfInput token={ctx.csrfToken} />
        {latest && (
          <div class="field checkbox">
            <input id="confirm-latest" name="confirm_latest" type="checkbox" value="on" />
            <label for="confirm-latest">
              Yes, delete the latest release {release.version}
            </label>
          </div>
        )}
        <button type="submit" class="button button-danger">Delete release</button>
      </form>
    </section>
  );
}
