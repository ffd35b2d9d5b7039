import { keyRolloutTags, type KeyState } from "../../src/credentials/access.ts";
import { type ApiKey, SCOPE_MODES, type ScopeMode } from "../../src/credentials/types.ts";
import type { ApiKeyFormValues } from "../forms_api_key.ts";
import type { FormError } from "../types.ts";
import type { ListPage } from "../listing.ts";
import {
  ActionsCell,
  autofocusProps,
  DataTable,
  ExpiresField,
  FieldError,
  FieldsetField,
  FormErrorSummary,
  IfCan,
  InputField,
  invalidProps,
  ListPager,
  PageHead,
  PostButton,
  ProjectSlugsInput,
  SearchBox,
  StateBadge,
  TagList,
  Time,
} from "./components.tsx";
import { can } from "../roles.ts";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";
import { TEXT_FIELDS } from "./text_fields.ts";

export const SCOPE_LABELS: Record<ScopeMode, { label: string; hint: string }> = {
  all_projects: { label: "All projects", hint: "every active project" },
  project_allow_list: { label: "Only these projects", hint: "the projects listed below" },
  project_deny_list: {
    label: "All projects except these",
    hint: "every active project but the ones listed below",
  },
  tag_allow_list: {
    label: "Projects with these tags",
    hint: "projects that carry at least one of the tags",
  },
  tag_deny_list: {
    label: "Projects without these tags",
    hint: "projects that carry none of the tags",
  },
};

/** One row of the key list: the key with what the store says about it. */
export interface ApiKeyRow {
  key: ApiKey;
  state: KeyState;
  /** An empty allow list: the key can never reach a project (`keyReachesNothing`). */
  reachesNothing: boolean;
}

/** Why a key reaches no project, said where the key is shown (list and "key created" page). */
export function ReachesNothingWarning(
  { apiKey, block = false }: { apiKey: ApiKey; block?: boolean },
) {
  const what = apiKey.scope_mode === "tag_allow_list" ? "no tag" : "no project";
  return (
    <p class={block ? "flash flash-warning" : "scope-warning"} role="status" data-reaches-nothing>
      This key reaches no project: its scope is "{SCOPE_LABELS[apiKey.scope_mode].label}" with{" "}
      {what}, and an empty allow list grants nothing.
      {block &&
        " Create another key with a scope that names projects or tags, and disable this one."}
    </p>
  );
}

/**
 * The create form comes first, folded unless it is wanted (no keys yet,
 * `?new=1`, or it was sent back with an error), so it is never below a long list.
 */
export function ApiKeysPage(
  { ctx, list, total, slugs, knownTags, values, error, openForm }: {
    ctx: PageContext;
    list: ListPage<ApiKeyRow>;
    total: number;
    /** The slugs of the projects that the shown keys name, by id. */
    slugs: ReadonlyMap<number, string>;
    knownTags: string[];
    values: ApiKeyFormValues;
    error?: FormError | null;
    openForm: boolean;
  },
) {
  return (
    <Layout ctx={ctx} title="API keys" nav="api-keys">
      <PageHead title="API keys" />
      <IfCan ctx={ctx} route="POST /admin/api-keys">
        <KeyForm
          ctx={ctx}
          knownTags={knownTags}
          values={values}
          error={error}
          open={openForm || !!error || total === 0}
        />
      </IfCan>
      <section class="card" id="key-list" aria-labelledby="key-list-title">
        <h2 id="key-list-title">All keys</h2>
        <p class="hint">
          Keys are shown in full only once, when created. The service keeps only their hash.
        </p>
        {total > 0 && (
          <SearchBox
            action="/admin/api-keys#key-list"
            q={list.q}
            label="Search API keys"
            placeholder="Name, key prefix (uds_…) or id"
          />
        )}
        {total === 0 ? <p class="muted">No API keys yet.</p> : list.rows.length > 0 && (
          <DataTable
            columns={["Name", "Scope", "Download", "State", "Expires", "Created", "Last used"]}
            actions
          >
            {list.rows.map(({ key, state, reachesNothing }) => {
              return (
                <tr data-api-key-id={String(key.id)} class={`state-${state}`}>
                  <td data-label="Name">
                    <a href={`/admin/api-keys/${key.id}`}>
                      <strong>{key.name}</strong>
                    </a>
                    <code class="muted">{key.prefix}…</code>
                    <span class="muted">id {key.id}</span>
                  </td>
                  <td data-label="Scope">
                    <ScopeSummary apiKey={key} slugs={slugs} />
                    {reachesNothing && <ReachesNothingWarning apiKey={key} />}
                    <RolloutTags apiKey={key} />
                  </td>
                  <td data-label="Download">{key.can_download ? "allowed" : "not allowed"}</td>
                  <td data-label="State">
                    <StateBadge state={state} />
                  </td>
                  <td data-label="Expires" class="nowrap">
                    <Time iso={key.expires_at} />
                  </td>
                  <td data-label="Created" class="nowrap">
                    <Time iso={key.created_at} />
                  </td>
                  <td data-label="Last used" class="nowrap">
                    <Time iso={key.last_used_at} />
                  </td>
                  <ActionsCell>
                    <a class="button button-small" href={`/admin/api-keys/${key.id}`}>
                      {can(ctx.role, "POST /admin/api-keys/:id") ? "Edit" : "Open"}
                    </a>
                    <IfCan ctx={ctx} route="POST /admin/api-keys/:id/disable">
                      <PostButton
                        action={`/admin/api-keys/${key.id}/${key.active ? "disable" : "enable"}`}
                        csrfToken={ctx.csrfToken}
                        label={key.active ? "Disable" : "Enable"}
                      />
                    </IfCan>
                  </ActionsCell>
                </tr>
              );
            })}
          </DataTable>
        )}
        <ListPager list={list} total={total} noun="keys" />
      </section>
    </Layout>
  );
}

function ScopeSummary(
  { apiKey, slugs }: { apiKey: ApiKey; slugs: ReadonlyMap<number, string> },
) {
  const mode = apiKey.scope_mode;
  const label = SCOPE_LABELS[mode]?.label ?? mode;
  const list = mode === "project_allow_list" || mode === "project_deny_list"
    ? apiKey.project_ids.map((id) => slugs.get(id) ?? `#${id}`)
    : mode === "tag_allow_list" || mode === "tag_deny_list"
    ? apiKey.tags
    : null;
  return (
    <>
      <span class="scope-mode">{label}</span>
      {list && <TagList tags={list} />}
    </>
  );
}

/** A key's rollout tags (`keyRolloutTags`), when it has any. */
export function RolloutTags({ apiKey }: { apiKey: ApiKey }) {
  const tags = keyRolloutTags(apiKey);
  return tags.length === 0 ? null : (
    <div class="rollout-tags" data-rollout-tags={tags.join(",")}>
      <span class="muted">Rollout tags</span> <TagList tags={tags} />
    </div>
  );
}

/** The key form: creates a key, or with `edit` changes one (see admin/routes/api_key_page.tsx). */
export function KeyForm(
  { ctx, knownTags, values, error, open, edit }: {
    ctx: PageContext;
    knownTags: string[];
    values: ApiKeyFormValues;
    error?: FormError | null;
    open: boolean;
    /** Where an edit posts, and the version of the key it starts from. */
    edit?: { action: string; version: string };
  },
) {
  const otherTags = values.tags.filter((tag) => !knownTags.includes(tag));
  return (
    <details class="card create-card" id={edit ? "edit-key" : "new-key"} open={open}>
      <summary>
        <h2>{edit ? "Edit API key" : "New API key"}</h2>
      </summary>
      <FormErrorSummary error={error} />
      <form
        method="post"
        action={edit?.action ?? "/admin/api-keys"}
        class="stack"
        data-scope-editor
      >
        <CsrfInput token={ctx.csrfToken} />
        {edit && <input type="hidden" name="expected_version" value={edit.version} />}
        <InputField
          id="key-name"
          {...TEXT_FIELDS.name}
          value={values.name}
          error={error}
          hint='Who or what uses the key, e.g. "Desktop app 3.x".'
        />
        <div class="field checkbox">
          <input
            id="key-can-download"
            name="can_download"
            type="checkbox"
            value="on"
            checked={values.can_download}
          />
          <label for="key-can-download">May read releases and download artifacts</label>
          <p class="hint" id="key-can-download-hint" data-can-download-hint>
            Every client API request needs this. A key without it is refused on every request (403
            {" "}
            <code>api key permission denied</code>): leave it off only for a key that must not work
            yet, or to stop a key's access while keeping its name, scope and statistics.
          </p>
        </div>
        <FieldsetField id="key-scope" name="scope_mode" legend="Scope" error={error}>
          <div class="choices">
            {SCOPE_MODES.map((mode) => (
              <div class="choice">
                <input
                  id={`scope-${mode}`}
                  name="scope_mode"
                  type="radio"
                  value={mode}
                  checked={values.scope_mode === mode}
                  {...(mode === SCOPE_MODES[0] ? autofocusProps(error, "scope_mode") : {})}
                />
                <label for={`scope-${mode}`}>
                  {SCOPE_LABELS[mode].label}
                  <span class="hint">{SCOPE_LABELS[mode].hint}</span>
                </label>
              </div>
            ))}
          </div>
        </FieldsetField>
        <fieldset
          class="field scope-list"
          data-scope-for="project_allow_list project_deny_list"
          {...invalidProps(error, "project_slugs", "key-projects")}
        >
          <legend>Projects</legend>
          <p class="hint" id="key-projects-hint">
            Used by "Only these projects" and "All projects except these". Comma-separated project
            slugs, e.g. <code>desktop, mobile-beta</code>.
          </p>
          <FieldError error={error} field="project_slugs" id="key-projects" />
          <label for="key-project-slugs" class="visually-hidden">Project slugs</label>
          <ProjectSlugsInput
            id="key-project-slugs"
            slugs={values.project_slugs}
            autocomplete="off"
            list="key-project-choices"
            data-slug-search="/admin/project-slugs"
            {...autofocusProps(error, "project_slugs")}
            aria-describedby="key-projects-hint"
          />
          {/* Filled as one types (admin.js asks /admin/project-slugs?q=…); the field works without it. */}
          <datalist id="key-project-choices"></datalist>
        </fieldset>
        <FieldsetField
          id="key-tags"
          name="tags"
          legend="Tags"
          error={error}
          class="field scope-list"
          data-scope-for="tag_allow_list tag_deny_list"
        >
          <p class="hint">Used by "Projects with these tags" and "Projects without these tags".</p>
          {knownTags.length > 0 && (
            <div class="checkbox-grid">
              {knownTags.map((tag, index) => (
                <div class="choice">
                  <input
                    id={`tag-${index}`}
                    name="tags"
                    type="checkbox"
                    value={tag}
                    checked={values.tags.includes(tag)}
                  />
                  <label for={`tag-${index}`}>
                    <span class="tag">{tag}</span>
                  </label>
                </div>
              ))}
            </div>
          )}
          <label for="key-other-tags">Other tags</label>
          <input
            id="key-other-tags"
            name="tags"
            type="text"
            value={otherTags.join(", ")}
            autocapitalize="none"
            {...autofocusProps(error, "tags")}
            aria-describedby="key-other-tags-hint"
          />
          <p class="hint" id="key-other-tags-hint">
            Comma-separated tags that no project carries yet.
          </p>
        </FieldsetField>
        <InputField
          id="key-rollout-tags"
          name="rollout_tags"
          label="Rollout tags"
          optional="optional"
          value={(values.rollout_tags ?? []).join(", ")}
          error={error}
          autocapitalize="none"
          spellcheck={false}
          hint={
            <>
              Comma-separated, whatever the scope. A staged rollout whose tester tag is one of these
              gives this key its release first, e.g. <code>beta-testers</code>.
            </>
          }
        />
        <ExpiresField
          id="key-expires"
          optional="optional, UTC"
          value={values.expires_at}
          error={error}
          data-utc-local="key-expires-local"
          hint={
            <>
              In UTC. Leave empty for a key that never expires.{" "}
              <output id="key-expires-local" data-local-time aria-live="polite"></output>
            </>
          }
        />
        <button type="submit" class="button button-primary">
          {edit ? "Save changes" : "Create API key"}
        </button>
      </form>
    </details>
  );
}
