/** The webhooks pages (docs/webhooks.md): endpoints, the secret shown once, the delivery log. */
import type { WebhookDelivery, WebhookEndpoint } from "../../src/store/webhooks.ts";
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
  PostButton,
  StateBadge,
  Time,
} from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export interface WebhookFormValues {
  url: string;
  events: string[];
}

export function WebhooksPage(
  { ctx, endpoints, values, error }: {
    ctx: PageContext;
    endpoints: readonly WebhookEndpoint[];
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
            <DataTable columns={["URL", "Events", "Created"]} actions>
              {endpoints.map((endpoint) => (
                <tr data-webhook-id={endpoint.id}>
                  <td data-label="URL">
                    <a href={`/admin/webhooks/${endpoint.id}`}>
                      <code>{endpoint.url}</code>
                    </a>
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
          <InputField
            id="webhook-url"
            name="url"
            label="URL"
            type="url"
            required
            value={values.url}
            placeholder="https://example.com/hooks"
            error={error}
          />
          <FieldsetField id="webhook-events" name="events" legend="Events" error={error}>
            <div class="checkbox-grid">
              {WEBHOOK_EVENT_KINDS.map((kind) => (
                <CheckboxField
                  id={`webhook-event-${kind}`}
                  name="events"
                  value={kind}
                  checked={values.events.includes(kind)}
                  label={<code>{kind}</code>}
                />
              ))}
            </div>
          </FieldsetField>
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
  { ctx, endpoint, deliveries }: {
    ctx: PageContext;
    endpoint: WebhookEndpoint;
    deliveries: readonly WebhookDelivery[];
  },
) {
  return (
    <Layout ctx={ctx} title={`Webhook ${endpoint.url}`} nav="webhooks">
      <p>
        <a href="/admin/webhooks">Webhooks</a>
      </p>
      <h1>
        Webhook <code>{endpoint.url}</code>
      </h1>
      <p>Events: {endpoint.events.join(", ")}</p>
      <SecretCard ctx={ctx} endpoint={endpoint} />
      <section class="card" id="webhook-deliveries">
        <h2>Deliveries (newest first)</h2>
        {deliveries.length === 0 ? <p>No deliveries yet.</p> : (
          <DataTable
            columns={["Delivery", "Event", "State", "Attempts", "Last answer", "Next attempt"]}
            actions
          >
            {deliveries.map((delivery) => (
              <tr data-delivery-id={delivery.id}>
                <td data-label="Delivery">
                  <code>{delivery.id}</code> <Time iso={delivery.created_at} />
                </td>
                <td data-label="Event">{delivery.event}</td>
                <td data-label="State">
                  <StateBadge state={delivery.status} />
                </td>
                <td data-label="Attempts">{delivery.attempts}</td>
                <td data-label="Last answer">
                  {delivery.last_error ??
                    (delivery.last_status === null ? "-" : String(delivery.last_status))}
                </td>
                <td data-label="Next attempt">
                  <Time iso={delivery.next_attempt_at} />
                </td>
                <ActionsCell>
                  <PostButton
                    action={`/admin/webhooks/${endpoint.id}/deliveries/${delivery.id}/resend`}
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
          <a class="button button-danger" href={`/admin/webhooks/${endpoint.id}/delete`}>
            Delete endpoint…
          </a>
        </p>
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
