/** The publish tokens page: the list (never a secret), the create form, and the page shown once. */
import type { PublishToken } from "../../src/credentials/publish_tokens.ts";
import type { Project } from "../../src/projects/types.ts";
import type { PublishTokenFormValues } from "../forms_publish_token.ts";
import type { FormError } from "../types.ts";
import {
  ActionsCell,
  CheckboxField,
  DataTable,
  ExpiresField,
  FieldsetField,
  FormErrorSummary,
  IfCan,
  InputField,
  PostButton,
  ProjectSlugsInput,
  SecretCopyRow,
  SecretCreatedLayout,
  StateBadge,
  Time,
} from "./components.tsx";
import { can } from "../roles.ts";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export interface PublishTokenRow {
  token: PublishToken;
  /** active, disabled or expired. */
  state: string;
  /** The slugs of its projects (empty for all projects). */
  slugs: string[];
}

const PERMISSION_LABELS: Record<string, string> = {
  upload: "upload releases, edit notes and build",
  release_state: "archive, activate, publish drafts, make latest, run staged rollouts",
};

/** The form's permission checkboxes: each one's form field and what it allows. */
const PERMISSION_CHECKBOXES = [
  { id: "token-can-upload", name: "can_upload", label: PERMISSION_LABELS.upload },
  {
    id: "token-can-change-state",
    name: "can_change_state",
    label: PERMISSION_LABELS.release_state,
  },
] as const;

export function PublishTokensPage(
  { ctx, rows, projects, values, error, openForm }: {
    ctx: PageContext;
    rows: PublishTokenRow[];
    projects: readonly Project[];
    values: PublishTokenFormValues;
    error?: FormError;
    /** `?new=1`: the create form starts unfolded (it always is with an error or no token yet). */
    openForm?: boolean;
  },
) {
  const open = openForm || !!error || rows.length === 0;
  return (
    <Layout ctx={ctx} title="Publish tokens" nav="publish-tokens">
      <h1>Publish tokens</h1>
      <p class="hint">
        Tokens for release pipelines (CI): they upload releases and change their state through the
        publishing API under <code>/publish/v1</code>. They start with <code>udp_</code>{" "}
        and are never accepted by the client API, nor client keys here. See docs/publishing.md in
        the repository for a curl recipe and ready CI jobs.
      </p>
      <IfCan ctx={ctx} route="POST /admin/publish-tokens">
        <details class="card create-card" id="new-token" open={open}>
          <summary>
            <h2>New publish token</h2>
          </summary>
          <form method="post" action="/admin/publish-tokens" class="stack">
            <CsrfInput token={ctx.csrfToken} />
            <FormErrorSummary error={error} />
            <InputField
              id="token-name"
              name="name"
              label="Name"
              hint="Names the token in the audit log, e.g. github-actions desktop."
              value={values.name}
              required
              maxlength={200}
              error={error}
            />
            <FieldsetField id="token-projects" name="project_slugs" legend="Projects" error={error}>
              <div class="choices">
                <CheckboxField
                  id="token-all-projects"
                  name="all_projects"
                  checked={values.all_projects}
                  label="all projects (also those created later)"
                />
                <div class="field">
                  <label for="token-projects" class="label-quiet">
                    or only these (comma-separated slugs)
                  </label>
                  <ProjectSlugsInput
                    id="token-projects"
                    slugs={values.project_slugs}
                    list="token-project-slugs"
                  />
                </div>
              </div>
              <datalist id="token-project-slugs">
                {projects.map((project) => <option key={project.slug} value={project.slug} />)}
              </datalist>
            </FieldsetField>
            <FieldsetField id="token-permissions" name="permissions" legend="May" error={error}>
              <div class="choices">
                {PERMISSION_CHECKBOXES.map(({ id, name, label }) => (
                  <CheckboxField id={id} name={name} checked={values[name]} label={label} />
                ))}
              </div>
            </FieldsetField>
            <ExpiresField
              id="token-expires"
              optional="optional"
              hint="UTC. Empty: never."
              value={values.expires_at}
              error={error}
            />
            <button type="submit" class="button button-primary">Create token</button>
          </form>
        </details>
      </IfCan>
      <section class="card" id="token-list">
        <h2>Tokens ({rows.length})</h2>
        {rows.length === 0 ? <p>No publish tokens yet.</p> : (
          <DataTable
            columns={["Name", "Prefix", "State", "Projects", "May", "Expires", "Last used"]}
            actions={can(ctx.role, "POST /admin/publish-tokens/:id/delete")}
          >
            {rows.map(({ token, state, slugs }) => (
              <tr data-publish-token-id={String(token.id)}>
                <td data-label="Name">{token.name}</td>
                <td data-label="Prefix">
                  <code>{token.prefix}…</code>
                </td>
                <td data-label="State">
                  <StateBadge state={state} />
                </td>
                <td data-label="Projects">{token.all_projects ? "all" : slugs.join(", ")}</td>
                <td data-label="May">{token.permissions.join(", ")}</td>
                <td data-label="Expires">
                  {token.expires_at ? <Time iso={token.expires_at} /> : "never"}
                </td>
                <td data-label="Last used">
                  {token.last_used_at ? <Time iso={token.last_used_at} /> : "never"}
                </td>
                <IfCan ctx={ctx} route="POST /admin/publish-tokens/:id/delete">
                  <ActionsCell>
                    <PostButton
                      action={`/admin/publish-tokens/${token.id}/${
                        token.active ? "disable" : "enable"
                      }`}
                      csrfToken={ctx.csrfToken}
                      label={token.active ? "Disable" : "Enable"}
                    />
                    <PostButton
                      action={`/admin/publish-tokens/${token.id}/delete`}
                      csrfToken={ctx.csrfToken}
                      label="Delete"
                    />
                  </ActionsCell>
                </IfCan>
              </tr>
            ))}
          </DataTable>
        )}
      </section>
    </Layout>
  );
}

/** Shown once, right after creation: the only place the full token appears (`data-publish-token`). */
export function PublishTokenCreatedPage(
  { ctx, token, secret, baseUrl }: {
    ctx: PageContext;
    token: PublishToken;
    secret: string;
    baseUrl: string;
  },
) {
  return (
    <SecretCreatedLayout
      ctx={ctx}
      title="Publish token created"
      nav="publish-tokens"
      notice={
        <>
          The publish token <strong>{token.name}</strong>{" "}
          was created. Copy it now into your CI's secrets: it is shown only this once.
        </>
      }
    >
      <SecretCopyRow
        id="new-publish-token"
        secret={secret}
        data={{ "data-publish-token": secret, "data-publish-token-id": String(token.id) }}
        copyLabel="Copy token"
      />
      <h2>Try it</h2>
      <pre class="code"><code>{`export UDS_PUBLISH_TOKEN='…'   # the token above
curl -fsS -H "Authorization: Bearer $UDS_PUBLISH_TOKEN" ${baseUrl}/publish/v1/token`}</code></pre>
      <p>
        <a href="/admin/publish-tokens" class="button">Back to publish tokens</a>
      </p>
    </SecretCreatedLayout>
  );
}
