import type { ApiKey } from "../../src/store/mod.ts";
import { Time } from "./components.tsx";
import { Layout, type PageContext } from "./layout.tsx";
import { SCOPE_LABELS } from "./api_keys.tsx";

/** The shell variable the example command reads the key from. */
export const KEY_VARIABLE = "UDS_API_KEY";
export const KEY_PLACEHOLDER = `$${KEY_VARIABLE}`;

/**
 * Shown once, right after creation: the only place the full key ever appears,
 * and on this page exactly once, in the `data-api-key` attribute. CSS shows it
 * (`content: attr(data-api-key)`), the copy buttons read it in script at click
 * time, and the curl example uses `$UDS_API_KEY` instead of repeating it.
 */
export function ApiKeyCreatedPage(
  { ctx, apiKey, secret, curlExample }: {
    ctx: PageContext;
    apiKey: ApiKey;
    secret: string;
    /** The example command with {@link KEY_PLACEHOLDER} where the key goes. */
    curlExample: string;
  },
) {
  return (
    <Layout ctx={ctx} title="API key created" nav="api-keys">
      <h1>API key created</h1>
      <section class="card key-reveal">
        <div class="flash flash-success" role="status">
          The key <strong>{apiKey.name}</strong>{" "}
          was created. Copy it now: it is shown only this once and cannot be shown again.
        </div>
        <p class="key-label" id="new-api-key-label">API key</p>
        <div class="copy-row">
          <div
            id="new-api-key"
            class="key-value"
            role="note"
            aria-labelledby="new-api-key-label"
            data-api-key={secret}
            data-api-key-id={String(apiKey.id)}
          />
          <button type="button" class="button button-primary" data-copy-key="#new-api-key">
            Copy key
          </button>
        </div>
        <dl class="facts">
          <dt>Key id</dt>
          <dd>{String(apiKey.id)}</dd>
          <dt>Scope</dt>
          <dd>{SCOPE_LABELS[apiKey.scope_mode].label}</dd>
          <dt>Download</dt>
          <dd>{apiKey.can_download ? "allowed" : "not allowed"}</dd>
          <dt>Expires</dt>
          <dd>{apiKey.expires_at ? <Time iso={apiKey.expires_at} /> : "never"}</dd>
        </dl>
        <h2>Try it</h2>
        <p class="hint">
          Ask for the latest release of a project with this key. Put the key in the shell variable
          first (<code>export {KEY_VARIABLE}='…'</code>{" "}
          with the copied key pasted between the quotes), or use "Copy command", which copies the
          command with the key filled in.
        </p>
        <div class="copy-row">
          <pre class="code" id="curl-example"><code>{curlExample}</code></pre>
          <button
            type="button"
            class="button"
            data-copy-command="#curl-example"
            data-key-source="#new-api-key"
            data-key-placeholder={KEY_PLACEHOLDER}
          >
            Copy command
          </button>
        </div>
        <p>
          <a href="/admin/api-keys" class="button">Back to API keys</a>
        </p>
      </section>
    </Layout>
  );
}
