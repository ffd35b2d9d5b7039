/** One API key: what it is, the edit form and the delete form. */
import type { KeyState } from "../../src/credentials/access.ts";
import type { ApiKey } from "../../src/credentials/types.ts";
import type { ApiKeyFormValues } from "../forms_api_key.ts";
import type { FormError } from "../types.ts";
import { keyRolloutTags } from "../../src/credentials/access.ts";
import { KeyForm, SCOPE_LABELS } from "./api_keys.tsx";
import { EditConflictNotice, IfCan, PageHead, StateBadge, TagList, Time } from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export interface ApiKeyPageProps {
  ctx: PageContext;
  apiKey: ApiKey;
  state: KeyState;
  downloads: number;
  /** The version of the stored key the edit form starts from. */
  version: string;
  knownTags: string[];
  values: ApiKeyFormValues;
  error?: FormError | null;
  /** Another admin changed the key after this form was shown: the key as it is now. */
  conflict?: { apiKey: ApiKey; slugs: string[] } | null;
}

export function ApiKeyPage(props: ApiKeyPageProps) {
  const { ctx, apiKey, state, conflict } = props;
  return (
    <Layout ctx={ctx} title={`API key ${apiKey.name}`} nav="api-keys">
      <p class="breadcrumb">
        <a href="/admin/api-keys#key-list">API keys</a> /
      </p>
      <PageHead
        title={apiKey.name}
        badges={<StateBadge state={state} />}
        slug={`${apiKey.prefix}… · id ${apiKey.id}`}
      />
      <section class="card" aria-label="Key facts">
        <dl class="facts">
          <dt>Created</dt>
          <dd>
            <Time iso={apiKey.created_at} />
          </dd>
          <dt>Last used</dt>
          <dd>
            <Time iso={apiKey.last_used_at} />
          </dd>
          <dt>Downloads</dt>
          <dd>{String(props.downloads)}</dd>
          <dt>Rollout tags</dt>
          <dd data-rollout-tags={keyRolloutTags(apiKey).join(",")}>
            <TagList tags={keyRolloutTags(apiKey)} />
          </dd>
        </dl>
      </section>
      {conflict && (
        <EditConflictNotice what="key">
          <dt>Name</dt>
          <dd data-current-name>{conflict.apiKey.name}</dd>
          <dt>Download</dt>
          <dd>{conflict.apiKey.can_download ? "allowed" : "not allowed"}</dd>
          <dt>Scope</dt>
          <dd>
            {SCOPE_LABELS[conflict.apiKey.scope_mode].label}
            {conflict.slugs.length + conflict.apiKey.tags.length > 0 &&
              `: ${[...conflict.slugs, ...conflict.apiKey.tags].join(", ")}`}
          </dd>
          <dt>Rollout tags</dt>
          <dd>{keyRolloutTags(conflict.apiKey).join(", ") || "none"}</dd>
          <dt>Expires</dt>
          <dd>{conflict.apiKey.expires_at ?? "never"}</dd>
        </EditConflictNotice>
      )}
      <IfCan ctx={ctx} route="POST /admin/api-keys/:id">
        <KeyForm
          ctx={ctx}
          knownTags={props.knownTags}
          values={props.values}
          error={props.error}
          open
          edit={{ action: `/admin/api-keys/${apiKey.id}`, version: props.version }}
        />
      </IfCan>
      <IfCan ctx={ctx} route="POST /admin/api-keys/:id/delete">
        <section class="card danger-zone" id="delete" aria-labelledby="delete-title">
          <h2 id="delete-title">Delete this key</h2>
          <p class="hint">
            Clients using it are refused at once. The key leaves the list; its id, name and prefix
            stay in the audit log and in the download statistics. To stop it for a while, disable it
            instead.
          </p>
          <form method="post" action={`/admin/api-keys/${apiKey.id}/delete`}>
            <CsrfInput token={ctx.csrfToken} />
            <button type="submit" class="button button-danger">Delete key</button>
          </form>
        </section>
      </IfCan>
    </Layout>
  );
}
