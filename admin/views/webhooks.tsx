/** The webhooks pages (docs/webhooks.md): endpoints, the secret shown once, the delivery log. */
import type {
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointHealth,
} from "../../src/webhooks/outbox.ts";
import { WEBHOOK_EVENT_KINDS } from "../../src/webhooks/events.ts";
import { isSigningSecret } from "../../src/lib/webhook_secret.ts";
import type { FormError } from "../types.ts";
import {
  ActionsCell,
  CheckboxField,
  DataTable,
  FieldsetField,
  FormErrorSummary,
  InputField,
  PageHead,
  PostButton,
  StateBadge,
  Time,
} from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export interface WebhookFormValues {
  url: string;
  events: string[];
}

/** A delivery's state as a person reads it: a pending one that failed an attempt is retrying. */
export function deliveryState(delivery: WebhookDelivery): string {
  if (delivery.status !== "pending") return delivery.status;
  return delivery.attempts > 0 ? "retrying" : "queued";
}

/** An endpoint's state from its latest attempt: failing, working, or not tried yet. */
function EndpointState({ health }: { health: WebhookEndpointHealth | null | undefined }) {
  if (health === null || health === undefined) {
    return <span class="badge badge-queued" data-endpoint-state="untried">no delivery yet</span>;
  }
  return health.ok
    ? <span class="badge badge-delivered" data-endpoint-state="working">working</span>
    : <span class="badge badge-failed" data-endpoint-state="failing">failing</span>;
}

/** What the latest attempt answered, in a few words. */
function lastAnswer(health: WebhookEndpointHealth): string {
  return health.error ?? (health.status === null ? "no answer" : `answered ${health.status}`);
}

/** The URL and event checkboxes of an endpoint's form (new or edit). */
function EndpointFields(
  { idPrefix, values, error }: {
    idPrefix: string;
    values: WebhookFormValues;
    error?: FormError | null;
  },
) {
  return (
    <>
      <InputField
        id={`${idPrefix}-url`}
        name="url"
        label="URL"
        type="url"
        required
        value={values.url}
        placeholder="https://example.com/hooks"
        error={error}
      />
      <FieldsetField id={`${idPrefix}-events`} name="events" legend="Events" error={error}>
        <div class="checkbox-grid">
          {WEBHOOK_EVENT_KINDS.map((kind) => (
            <CheckboxField
              id={`${idPrefix}-event-${kind}`}
              name="events"
              value={kind}
              checked={values.events.includes(kind)}
              label={<code>{kind}</code>}
            />
          ))}
        </div>
      </FieldsetField>
    </>
  );
}

export function WebhooksPage(
  { ctx, endpoints, health, values, error }: {
    ctx: PageContext;
    endpoints: readonly WebhookEndpoint[];
    health: ReadonlyMap<string, WebhookEndpointHealth>;
    values: WebhookFormValues;
    error?: FormError | null;
  },
) {
  return (
    <Layout ctx={ctx} title="Webhooks" nav="webhooks">
      <h1>Webhooks</h1>
      <p class="hint">
        Each endpoint receives the events it is registered for as a signed JSON <code>POST</code>
        {" "}
        (see docs/webhooks.md for the headers and how to verify them). Deliveries are retried for
        about 29 hours.
      </p>
      <section class="card" id="webhook-list">
        <h2>Endpoints ({endpoints.length})</h2>
        {endpoints.length === 0
          ? <p>No webhook endpoints yet.</p>
          : (
            <DataTable columns={["URL", "State", "Events", "Created"]} actions>
              {endpoints.map((endpoint) => (
                <tr
                  data-webhook-id={endpoint.id}
                  class={health.get(endpoint.id)?.ok === false ? "is-failing" : undefined}
                >
                  <td data-label="URL">
                    <a href={`/admin/webhooks/${endpoint.id}`}>
                      <code>{endpoint.url}</code>
                    </a>
                  </td>
                  <td data-label="State">
                    <EndpointState health={health.get(endpoint.id)} />
                    {health.get(endpoint.id)?.ok === false && (
                      <span class="cell-note">{lastAnswer(health.get(endpoint.id)!)}</span>
                    )}
                  </td>
                  <td data-label="Events">{endpoint.events.join(", ")}</td>
                  <td data-label="Created">
                    <Time iso={endpoint.created_at} />
                  </td>
                  <ActionsCell>
                    <a class="button button-small" href={`/admin/webhooks/${endpoint.id}`}>
                      Deliveries
                    </a>
                    {/* Deleting asks first, on a page of its own (works without script). */}
                    <a
                      class="button button-small"
                      href={`/admin/webhooks/${endpoint.id}/delete`}
                    >
                      Delete…
                    </a>
                  </ActionsCell>
                </tr>
              ))}
            </DataTable>
          )}
      </section>
      <section class="card">
        <h2>New endpoint</h2>
        <form method="post" action="/admin/webhooks" id="webhook-form" class="stack">
          <FormErrorSummary error={error} />
          <CsrfInput token={ctx.csrfToken} />
          <EndpointFields idPrefix="webhook" values={values} error={error} />
          <button type="submit" class="button button-primary">Add the endpoint</button>
        </form>
      </section>
    </Layout>
  );
}

/** The secret, shown once: after adding an endpoint (`created`) or giving it a new secret. */
export function WebhookSecretPage(
  { ctx, endpoint, created = false }: {
    ctx: PageContext;
    endpoint: WebhookEndpoint;
    created?: boolean;
  },
) {
  const title = created ? "Webhook endpoint added" : "New webhook secret";
  const until = endpoint.previous_secrets?.[0]?.until;
  return (
    <Layout ctx={ctx} title={title} nav="webhooks">
      <h1>{title}</h1>
      <p>
        Deliveries to <code>{endpoint.url}</code> are signed with this secret. Copy it now:{" "}
        <strong>it is not shown again</strong>.
      </p>
      <p>
        <code id="webhook-secret">{endpoint.secret}</code>
      </p>
      {!created && (
        <p id="webhook-previous-secret">
          {until === undefined ? "The replaced secret signs no more." : (
            <>
              Until <Time iso={until} />{" "}
              deliveries carry a signature under the replaced secret as well, so the receiver can
              switch to the new one in that time without missing any.
            </>
          )}
        </p>
      )}
      <p>
        <a href={`/admin/webhooks/${endpoint.id}`}>The endpoint's deliveries</a> ·{" "}
        <a href="/admin/webhooks">All webhooks</a>
      </p>
    </Layout>
  );
}

/** The endpoint's secret: whether it signs, and the form that gives it a new one. */
function SecretCard(
  { ctx, endpoint }: { ctx: PageContext; endpoint: WebhookEndpoint },
) {
  const overlap = (endpoint.previous_secrets ?? [])
    .filter((previous) => Date.parse(previous.until) > Date.now());
  return (
    <section class="card" id="webhook-secret-card">
      <h2>Signing secret</h2>
      {endpoint.secret === null
        ? (
          <p class="flash flash-warning" role="alert" id="webhook-no-secret">
            This endpoint has no secret (it was restored from a backup made without webhook
            secrets): its deliveries fail and are retried until it gets a new one.
          </p>
        )
        : !isSigningSecret(endpoint.secret)
        ? (
          <p class="flash flash-warning" role="alert" id="webhook-no-secret">
            This endpoint's secret is not a Standard Webhooks secret (an earlier form): its
            deliveries fail and are retried until it gets a new one.
          </p>
        )
        : (
          <p>
            Deliveries are signed with the secret shown when it was made.
            {overlap.length > 0 && (
              <>
                {" "}A replaced secret also signs until <Time iso={overlap[0].until} />.
              </>
            )}
          </p>
        )}
      <form method="post" action={`/admin/webhooks/${endpoint.id}/secret`} id="webhook-secret-form">
        <CsrfInput token={ctx.csrfToken} />
        <fieldset>
          <legend>The current secret</legend>
          <label>
            <input type="radio" name="previous" value="keep" checked />{" "}
            keeps signing for 24 hours (the receiver switches meanwhile)
          </label>
          <label>
            <input type="radio" name="previous" value="end" /> stops at once (it leaked)
          </label>
        </fieldset>
        <button type="submit" class="button">Make a new secret</button>
      </form>
    </section>
  );
}

export function WebhookPage(
  { ctx, endpoint, deliveries, health, edit }: {
    ctx: PageContext;
    endpoint: WebhookEndpoint;
    deliveries: readonly WebhookDelivery[];
    health: WebhookEndpointHealth | null;
    /** The edit form sent back with an error. */
    edit?: { values: WebhookFormValues; error: FormError } | null;
  },
) {
  const base = `/admin/webhooks/${endpoint.id}`;
  return (
    <Layout ctx={ctx} title={`Webhook ${endpoint.url}`} nav="webhooks">
      <p>
        <a href="/admin/webhooks">Webhooks</a>
      </p>
      <PageHead
        title={
          <>
            Webhook <code>{endpoint.url}</code>
          </>
        }
        badges={<EndpointState health={health} />}
      />
      <section class="card" id="webhook-state" aria-labelledby="webhook-state-title">
        <h2 id="webhook-state-title">State</h2>
        {health === null
          ? <p>Nothing was sent to this endpoint yet. A test ping shows whether it answers.</p>
          : health.ok
          ? (
            <p data-webhook-health="working">
              The latest delivery (<code>{health.event}</code>,{" "}
              <Time iso={health.at} />) was answered{" "}
              <strong class="nowrap">{health.status}</strong>.
            </p>
          )
          : (
            <p class="flash flash-error" data-webhook-health="failing">
              <strong>Failing.</strong> The latest delivery (<code>{health.event}</code>,{" "}
              <Time iso={health.at} />) failed: {lastAnswer(health)}.{" "}
              <a href={`${base}/deliveries/${health.delivery_id}`}>See the delivery</a>
            </p>
          )}
        <p>Events: {endpoint.events.join(", ")}</p>
        <div class="actions">
          <PostButton
            action={`${base}/test`}
            csrfToken={ctx.csrfToken}
            label="Send a test ping"
            buttonClass="button button-primary"
          />
        </div>
        <p class="hint">
          A test ping is a signed <code>webhook.test</code>{" "}
          event sent now, to this endpoint only; its answer shows on the next page and in the
          deliveries below.
        </p>
      </section>
      <details class="card create-card" id="webhook-edit" open={edit ? true : undefined}>
        <summary>
          <h2>Change the URL or events</h2>
        </summary>
        <form method="post" action={base} class="stack" id="webhook-edit-form">
          <FormErrorSummary error={edit?.error} />
          <CsrfInput token={ctx.csrfToken} />
          <EndpointFields
            idPrefix="webhook-edit"
            values={edit?.values ?? { url: endpoint.url, events: endpoint.events }}
            error={edit?.error}
          />
          <p class="hint">
            The secret stays. Deliveries waiting for a retry go to the new URL.
          </p>
          <button type="submit" class="button">Save URL and events</button>
        </form>
      </details>
      <SecretCard ctx={ctx} endpoint={endpoint} />
      <section class="card" id="webhook-deliveries">
        <h2>Deliveries (newest first)</h2>
        {deliveries.length === 0 ? <p>No deliveries yet.</p> : (
          <DataTable
            columns={["Delivery", "Event", "State", "Attempts", "Last answer", "Next attempt"]}
            actions
          >
            {deliveries.map((delivery) => (
              <tr data-delivery-id={delivery.id} data-delivery-state={deliveryState(delivery)}>
                <td data-label="Delivery">
                  <a href={`${base}/deliveries/${delivery.id}`}>
                    <Time iso={delivery.created_at} />
                  </a>
                </td>
                <td data-label="Event">
                  <code>{delivery.event}</code>
                </td>
                <td data-label="State">
                  <StateBadge state={deliveryState(delivery)} />
                </td>
                <td data-label="Attempts">{delivery.attempts}</td>
                <td data-label="Last answer">
                  {delivery.last_error ??
                    (delivery.last_status === null ? "-" : String(delivery.last_status))}
                </td>
                <td data-label="Next attempt">
                  {delivery.next_attempt_at === null
                    ? <span class="muted">none</span>
                    : <Time iso={delivery.next_attempt_at} />}
                </td>
                <ActionsCell>
                  <a class="button button-small" href={`${base}/deliveries/${delivery.id}`}>
                    View
                  </a>
                  <PostButton
                    action={`${base}/deliveries/${delivery.id}/resend`}
                    csrfToken={ctx.csrfToken}
                    label="Send again"
                  />
                </ActionsCell>
              </tr>
            ))}
          </DataTable>
        )}
      </section>
      <section class="card danger-zone" id="delete" aria-labelledby="delete-title">
        <h2 id="delete-title">Delete this endpoint</h2>
        <p>
          <a class="button button-danger" href={`${base}/delete`}>
            Delete endpoint…
          </a>
        </p>
      </section>
    </Layout>
  );
}

/** The body as sent, indented for reading (the bytes signed are the stored ones). */
function readableJson(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** Values up to this long (a time, an id) stay on one line: a time's hyphens are no place to break. */
const WHOLE_VALUE_CHARS = 32;

/** The indented JSON, line by line, each short value kept whole; the text is the JSON's. */
function JsonText({ body }: { body: string }) {
  return (
    <>
      {readableJson(body).split("\n").map((line, i) => {
        const [, key = "", value = line] = /^(\s*"[^"]*": )(.+)$/.exec(line) ?? [];
        return (
          <>
            {i > 0 && "\n"}
            {key}
            {key !== "" && value.length <= WHOLE_VALUE_CHARS
              ? <span class="whole">{value}</span>
              : value}
          </>
        );
      })}
    </>
  );
}

/** One delivery: what was sent, its state and what the receiver answered. */
export function WebhookDeliveryPage(
  { ctx, endpoint, delivery }: {
    ctx: PageContext;
    endpoint: WebhookEndpoint;
    delivery: WebhookDelivery;
  },
) {
  const base = `/admin/webhooks/${endpoint.id}`;
  const state = deliveryState(delivery);
  return (
    <Layout ctx={ctx} title={`Delivery ${delivery.id}`} nav="webhooks">
      <p>
        <a href="/admin/webhooks">Webhooks</a> · <a href={base}>{endpoint.url}</a>
      </p>
      <PageHead
        title={
          <>
            Delivery of <code>{delivery.event}</code>
          </>
        }
        badges={<StateBadge state={state} />}
        slug={<code>{delivery.id}</code>}
      />
      <section class="card" data-delivery={delivery.id} data-delivery-state={state}>
        <dl class="facts">
          <dt>Made</dt>
          <dd>
            <Time iso={delivery.created_at} />
          </dd>
          <dt>Attempts</dt>
          <dd>{delivery.attempts}</dd>
          <dt>Last attempt</dt>
          <dd>
            <Time iso={delivery.last_attempt_at} />
          </dd>
          <dt>Answer</dt>
          <dd data-delivery-answer>
            {delivery.last_status === null
              ? <span class="muted">{delivery.attempts === 0 ? "not sent yet" : "no answer"}</span>
              : <strong>HTTP {delivery.last_status}</strong>}
            {delivery.last_error !== null && <>{" "}({delivery.last_error})</>}
          </dd>
          <dt>Next attempt</dt>
          <dd>
            {delivery.next_attempt_at === null
              ? <span class="muted">none</span>
              : <Time iso={delivery.next_attempt_at} />}
          </dd>
        </dl>
        <div class="actions">
          <PostButton
            action={`${base}/deliveries/${delivery.id}/resend`}
            csrfToken={ctx.csrfToken}
            label="Send again"
          />
        </div>
      </section>
      <section class="card" aria-labelledby="delivery-body-title">
        <h2 id="delivery-body-title">What was sent</h2>
        <p class="hint">
          The JSON body, signed as described in docs/webhooks.md (shown indented; the bytes sent
          have no spaces).
        </p>
        <pre
          class="code code-json"
          data-delivery-body
        ><code>
            <JsonText body={delivery.body} />
          </code></pre>
      </section>
      <section class="card" aria-labelledby="delivery-answer-title">
        <h2 id="delivery-answer-title">What the receiver answered</h2>
        {delivery.last_answer
          ? (
            <>
              <p class="hint">The start of the answer's body (at most 1 KiB).</p>
              <pre
                class="code code-json"
                data-delivery-answer-body
              ><code>{delivery.last_answer}</code></pre>
            </>
          )
          : (
            <p class="muted">
              {delivery.last_status === null ? "No answer came." : "The answer had no body."}
            </p>
          )}
      </section>
    </Layout>
  );
}

/** The confirmation step before an endpoint is deleted: a page of its own, no script needed. */
export function WebhookDeletePage(
  { ctx, endpoint }: { ctx: PageContext; endpoint: WebhookEndpoint },
) {
  return (
    <Layout ctx={ctx} title="Delete webhook endpoint" nav="webhooks">
      <p>
        <a href="/admin/webhooks">Webhooks</a>
      </p>
      <h1>Delete webhook endpoint?</h1>
      <section class="card" data-webhook-delete={endpoint.id}>
        <p>
          Deliveries to <code>{endpoint.url}</code>{" "}
          stop, including those waiting for a retry, and its delivery log is deleted. This cannot be
          undone; the receiver's secret is not shown again.
        </p>
        <form
          method="post"
          action={`/admin/webhooks/${endpoint.id}/delete`}
          class="actions"
        >
          <CsrfInput token={ctx.csrfToken} />
          <button type="submit" class="button button-danger">Delete endpoint</button>
          <a class="button" href={`/admin/webhooks/${endpoint.id}`}>Cancel</a>
        </form>
      </section>
    </Layout>
  );
}
