import { keyRolloutTags } from "../../src/credentials/access.ts";
import type { ApiKey } from "../../src/credentials/types.ts";
import { SecretCopyRow, SecretCreatedLayout, TagList, Time } from "./components.tsx";
import type { PageContext } from "./layout.tsx";
import { ReachesNothingWarning, SCOPE_LABELS } from "./api_keys.tsx";

/** The shell variable the example command reads the key from. */
export const KEY_VARIABLE = "UDS_API_KEY";
export const KEY_PLACEHOLDER = `$${KEY_VARIABLE}`;

/**
 * Shown once, right after creation: the only place the full key ever appears,
 * in one element that carries it as `data-api-key` and shows it as real,
 * selectable text (one click selects it all). The copy buttons read it at
 * click time and are hidden until the script shows them, so they never appear
 * without JavaScript; the curl example uses `$UDS_API_KEY` instead of
 * repeating the key.
 */
export function ApiKeyCreatedPage(
  { ctx, apiKey, secret, reachesNothing, curlExample }: {
    ctx: PageContext;
    apiKey: ApiKey;
    secret: string;
    /** The key's allow list is empty (`keyReachesNothing`): the page warns. */
    reachesNothing: boolean;
    /** The example command with {@link KEY_PLACEHOLDER} where the key goes. */
    curlExample: string;
  },
) {
  return (
    <SecretCreatedLayout
      ctx={ctx}
      title="API key created"
      nav="api-keys"
      notice={
        <>
          The key <strong>{apiKey.name}</strong>{" "}
          was created. Copy it now: it is shown only this once and cannot be shown again.
        </>
      }
    >
      {reachesNothing && <ReachesNothingWarning apiKey={apiKey} block />}
      <p class="key-label" id="new-api-key-label">API key</p>
      <SecretCopyRow
        id="new-api-key"
        secret={secret}
        labelledBy="new-api-key-label"
        data={{ "data-api-key": secret, "data-api-key-id": String(apiKey.id) }}
        copyLabel="Copy key"
      />
      <dl class="facts">
        <dt>Key id</dt>
        <dd>{String(apiKey.id)}</dd>
        <dt>Scope</dt>
        <dd>{SCOPE_LABELS[apiKey.scope_mode].label}</dd>
        <dt>Download</dt>
        <dd>{apiKey.can_download ? "allowed" : "not allowed"}</dd>
        <dt>Rollout tags</dt>
        <dd>
          <TagList tags={keyRolloutTags(apiKey)} />
        </dd>
        <dt>Expires</dt>
        <dd>{apiKey.expires_at ? <Time iso={apiKey.expires_at} /> : "never"}</dd>
      </dl>
      <h2>Try it</h2>
      <p class="hint">
        Ask for the latest release of a project with this key. Put the key in the shell variable
        first (<code>export {KEY_VARIABLE}='…'</code>{" "}
        with the copied key pasted between the quotes). With JavaScript on, "Copy command" copies
        the command with the key filled in.
      </p>
      <div class="copy-row">
        <pre class="code" id="curl-example"><code>{curlExample}</code></pre>
        <button
          type="button"
          class="button"
          data-copy-command="#curl-example"
          data-key-source="#new-api-key"
          data-key-placeholder={KEY_PLACEHOLDER}
          data-needs-script
          hidden
        >
          Copy command
        </button>
      </div>
      <p>
        <a href="/admin/api-keys" class="button">Back to API keys</a>
      </p>
    </SecretCreatedLayout>
  );
}
