import type { ApiKey } from "../../src/store/mod.ts";
import { Time } from "./components.tsx";
import { Layout, type PageContext } from "./layout.tsx";
import { SCOPE_LABELS } from "./api_keys.tsx";

/** Shown once, right after creation: the only place the full key ever appears. */
export function ApiKeyCreatedPage(
  { ctx, apiKey, secret, curlExample }: {
    ctx: PageContext;
    apiKey: ApiKey;
    secret: string;
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
        <label for="new-api-key" class="key-label">API key</label>
        <div class="copy-row">
          <input
            id="new-api-key"
            class="key-value"
            type="text"
            readonly
            value={secret}
            data-api-key={secret}
            data-api-key-id={String(apiKey.id)}
            spellcheck={false}
            autocomplete="off"
          />
          <button type="button" class="button button-primary" data-copy="#new-api-key">
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
        <p class="hint">Ask for the latest release of a project with this key:</p>
        <div class="copy-row">
          <pre class="code" id="curl-example"><code>{curlExample}</code></pre>
          <button type="button" class="button" data-copy="#curl-example">Copy command</button>
        </div>
        <p>
          <a href="/admin/api-keys" class="button">Back to API keys</a>
        </p>
      </section>
    </Layout>
  );
}
