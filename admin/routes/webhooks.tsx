/** Webhook endpoints and their delivery logs (docs/webhooks.md); admins only. */
import type { Store } from "../../src/kv/store.ts";
import type { Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { NotFoundError, ValidationError } from "../../src/kv/errors.ts";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookDelivery,
  getWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpointHealth,
  listWebhookEndpoints,
  newWebhookId,
  recordWebhookTest,
  replaceWebhookSecret,
  resendWebhookDelivery,
  signingSecretsOf,
  updateWebhookEndpoint,
  type WebhookEndpoint,
  webhookTestBody,
} from "../../src/webhooks/outbox.ts";
import { WEBHOOK_TEST_EVENT } from "../../src/webhooks/events.ts";
import { attemptDelivery } from "../../src/webhooks/send.ts";
import { audit, pageContext, redirectWithFlash } from "../context.ts";
import { field, formErrorOf } from "../forms.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import {
  WebhookDeletePage,
  WebhookDeliveryPage,
  type WebhookFormValues,
  WebhookPage,
  WebhookSecretPage,
  WebhooksPage,
} from "../views/webhooks.tsx";

const ID_PATTERN = /^[0-9a-z]{9,40}$/;

/**
 * An endpoint's URL as the audit log keeps it: scheme and host only. The path
 * and query of a receiver's URL are often its credential (a Slack-style
 * incoming webhook), and every role reads the audit log.
 */
function auditedUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(not a URL)";
  }
}

export function addWebhookRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  async function renderList(
    c: Context<AdminEnv>,
    values: WebhookFormValues,
    error: FormError | null = null,
  ) {
    const [endpoints, health] = await Promise.all([
      listWebhookEndpoints(c.var.store),
      listWebhookEndpointHealth(c.var.store),
    ]);
    return c.html(
      <WebhooksPage
        ctx={pageContext(c, deps)}
        endpoints={endpoints}
        health={health}
        values={values}
        error={error}
      />,
      error ? 400 : 200,
    );
  }

  async function renderEndpoint(
    c: Context<AdminEnv>,
    endpoint: WebhookEndpoint,
    edit: { values: WebhookFormValues; error: FormError } | null = null,
  ) {
    const [deliveries, health] = await Promise.all([
      listWebhookDeliveries(c.var.store, endpoint.id),
      listWebhookEndpointHealth(c.var.store),
    ]);
    return c.html(
      <WebhookPage
        ctx={pageContext(c, deps)}
        endpoint={endpoint}
        deliveries={deliveries}
        health={health.get(endpoint.id) ?? null}
        edit={edit}
      />,
      edit ? 400 : 200,
    );
  }

  async function endpointOr404(store: Store, raw: string) {
    const endpoint = ID_PATTERN.test(raw) ? await getWebhookEndpoint(store, raw) : null;
    if (endpoint === null) {
      throw new HTTPException(404, { message: `There is no webhook endpoint ${raw}.` });
    }
    return endpoint;
  }

  admin.get("/webhooks", (c) => renderList(c, { url: "", events: [] }));

  admin.post("/webhooks", async (c) => {
    const form = c.get("form");
    const values = { url: field(form, "url"), events: form["events"] ?? [] };
    let endpoint;
    try {
      endpoint = await createWebhookEndpoint(c.var.store, {
        ...values,
        created_by: c.get("session").username,
      });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderList(c, values, formErrorOf(error));
    }
    await audit(c, deps, {
      action: "webhook.create",
      target: `webhook ${endpoint.id}`,
      details: `url ${auditedUrl(endpoint.url)}; events ${endpoint.events.join(",")}`,
    });
    return c.html(<WebhookSecretPage ctx={pageContext(c, deps)} endpoint={endpoint} created />);
  });

  admin.post("/webhooks/:id/secret", async (c) => {
    const found = await endpointOr404(c.var.store, c.req.param("id"));
    const keepPrevious = field(c.get("form"), "previous") !== "end";
    const endpoint = await replaceWebhookSecret(c.var.store, found.id, { keepPrevious }).catch(
      (error) => {
        if (!(error instanceof NotFoundError)) throw error;
        throw new HTTPException(404, { message: `There is no webhook endpoint ${found.id}.` });
      },
    );
    const until = endpoint.previous_secrets?.[0]?.until;
    await audit(c, deps, {
      action: "webhook.secret",
      target: `webhook ${endpoint.id}`,
      details: `url ${auditedUrl(endpoint.url)}; ` +
        (keepPrevious && until !== undefined
          ? `the replaced secret signs until ${until}`
          : "the replaced secret signs no more"),
    });
    return c.html(<WebhookSecretPage ctx={pageContext(c, deps)} endpoint={endpoint} />);
  });

  admin.get("/webhooks/:id", async (c) => {
    return await renderEndpoint(c, await endpointOr404(c.var.store, c.req.param("id")));
  });

  // The endpoint's URL and events (its secret and delivery log stay).
  admin.post("/webhooks/:id", async (c) => {
    const found = await endpointOr404(c.var.store, c.req.param("id"));
    const form = c.get("form");
    const values = { url: field(form, "url"), events: form["events"] ?? [] };
    let changed;
    try {
      changed = await updateWebhookEndpoint(c.var.store, found.id, values);
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw new HTTPException(404, { message: `There is no webhook endpoint ${found.id}.` });
      }
      if (!(error instanceof ValidationError)) throw error;
      return await renderEndpoint(c, found, { values, error: formErrorOf(error) });
    }
    const { before, after } = changed;
    await audit(c, deps, {
      action: "webhook.update",
      target: `webhook ${after.id}`,
      details: `url ${auditedUrl(before.url)} -> ${auditedUrl(after.url)}; ` +
        `events ${before.events.join(",")} -> ${after.events.join(",")}`,
    });
    return redirectWithFlash(c, deps, {
      location: `/admin/webhooks/${after.id}`,
      kind: "success",
      text: "The endpoint's URL and events were saved.",
    });
  });

  // A test ping: a signed webhook.test event sent now, through the same address guard.
  admin.post("/webhooks/:id/test", async (c) => {
    const endpoint = await endpointOr404(c.var.store, c.req.param("id"));
    const deliveryId = newWebhookId();
    const body = webhookTestBody(endpoint, c.get("session").username);
    const outcome = await attemptDelivery({
      url: endpoint.url,
      secrets: signingSecretsOf(endpoint, Date.now()),
      deliveryId,
      event: WEBHOOK_TEST_EVENT,
      body,
      allowPrivate: deps.config.webhooksAllowPrivate,
      timeoutMs: deps.config.webhooksTimeoutSeconds * 1000,
    });
    const delivery = await recordWebhookTest(c.var.store, {
      endpointId: endpoint.id,
      deliveryId,
      body,
      outcome,
    });
    await audit(c, deps, {
      action: "webhook.test",
      target: `webhook ${endpoint.id}`,
      details: `delivery ${delivery.id}: ` +
        (outcome.ok ? `answered ${outcome.status}` : outcome.error ?? "failed"),
    });
    return redirectWithFlash(c, deps, {
      location: `/admin/webhooks/${endpoint.id}/deliveries/${delivery.id}`,
      kind: outcome.ok ? "success" : "error",
      text: outcome.ok
        ? `The test ping was delivered: the receiver answered ${outcome.status}.`
        : `The test ping failed: ${outcome.error}.`,
    });
  });

  admin.get("/webhooks/:id/deliveries/:delivery", async (c) => {
    const endpoint = await endpointOr404(c.var.store, c.req.param("id"));
    const deliveryId = c.req.param("delivery");
    const delivery = ID_PATTERN.test(deliveryId)
      ? await getWebhookDelivery(c.var.store, { endpointId: endpoint.id, deliveryId })
      : null;
    if (delivery === null) {
      throw new HTTPException(404, { message: `There is no delivery ${deliveryId}.` });
    }
    return c.html(
      <WebhookDeliveryPage ctx={pageContext(c, deps)} endpoint={endpoint} delivery={delivery} />,
    );
  });

  admin.get("/webhooks/:id/delete", async (c) => {
    const endpoint = await endpointOr404(c.var.store, c.req.param("id"));
    return c.html(<WebhookDeletePage ctx={pageContext(c, deps)} endpoint={endpoint} />);
  });

  admin.post("/webhooks/:id/delete", async (c) => {
    const endpoint = await endpointOr404(c.var.store, c.req.param("id"));
    await deleteWebhookEndpoint(c.var.store, endpoint.id).catch((error) => {
      if (!(error instanceof NotFoundError)) throw error;
    });
    await audit(c, deps, {
      action: "webhook.delete",
      target: `webhook ${endpoint.id}`,
      details: `url ${auditedUrl(endpoint.url)}`,
    });
    return redirectWithFlash(c, deps, {
      location: "/admin/webhooks",
      kind: "success",
      text: `The webhook endpoint ${endpoint.url} was deleted.`,
    });
  });

  admin.post("/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const endpoint = await endpointOr404(c.var.store, c.req.param("id"));
    const deliveryId = c.req.param("delivery");
    let delivery;
    try {
      if (!ID_PATTERN.test(deliveryId)) throw new NotFoundError(deliveryId);
      delivery = await resendWebhookDelivery(c.var.store, { endpointId: endpoint.id, deliveryId });
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      throw new HTTPException(404, { message: `There is no delivery ${deliveryId}.` });
    }
    await audit(c, deps, {
      action: "webhook.resend",
      target: `webhook ${endpoint.id}`,
      details: `delivery ${deliveryId} sent again as ${delivery.id}`,
    });
    return redirectWithFlash(c, deps, {
      location: `/admin/webhooks/${endpoint.id}`,
      kind: "success",
      text: `The ${delivery.event} event is queued to be sent again.`,
    });
  });
}
