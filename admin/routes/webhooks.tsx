/** Webhook endpoints and their delivery logs (docs/webhooks.md); admins only. */
import type { Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  NotFoundError,
  replaceWebhookSecret,
  resendWebhookDelivery,
  ValidationError,
} from "../../src/store/mod.ts";
import { audit, pageContext, redirectWithFlash } from "../context.ts";
import { field, formErrorOf } from "../forms.ts";
import type { AdminEnv, FormError, ServiceDeps } from "../types.ts";
import {
  WebhookDeletePage,
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

export function addWebhookRoutes(admin: Hono<AdminEnv>, deps: ServiceDeps): void {
  const { kv } = deps;

  async function renderList(
    c: Context<AdminEnv>,
    values: WebhookFormValues,
    error: FormError | null = null,
  ) {
    return c.html(
      <WebhooksPage
        ctx={pageContext(c, deps)}
        endpoints={await listWebhookEndpoints(kv)}
        values={values}
        error={error}
      />,
      error ? 400 : 200,
    );
  }

  async function endpointOr404(raw: string) {
    const endpoint = ID_PATTERN.test(raw) ? await getWebhookEndpoint(kv, raw) : null;
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
      endpoint = await createWebhookEndpoint(kv, {
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
    const found = await endpointOr404(c.req.param("id"));
    const keepPrevious = field(c.get("form"), "previous") !== "end";
    const endpoint = await replaceWebhookSecret(kv, found.id, { keepPrevious }).catch((error) => {
      if (!(error instanceof NotFoundError)) throw error;
      throw new HTTPException(404, { message: `There is no webhook endpoint ${found.id}.` });
    });
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
    const endpoint = await endpointOr404(c.req.param("id"));
    return c.html(
      <WebhookPage
        ctx={pageContext(c, deps)}
        endpoint={endpoint}
        deliveries={await listWebhookDeliveries(kv, endpoint.id)}
      />,
    );
  });

  admin.get("/webhooks/:id/delete", async (c) => {
    const endpoint = await endpointOr404(c.req.param("id"));
    return c.html(<WebhookDeletePage ctx={pageContext(c, deps)} endpoint={endpoint} />);
  });

  admin.post("/webhooks/:id/delete", async (c) => {
    const endpoint = await endpointOr404(c.req.param("id"));
    await deleteWebhookEndpoint(kv, endpoint.id).catch((error) => {
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
    const endpoint = await endpointOr404(c.req.param("id"));
    const deliveryId = c.req.param("delivery");
    let delivery;
    try {
      if (!ID_PATTERN.test(deliveryId)) throw new NotFoundError(deliveryId);
      delivery = await resendWebhookDelivery(kv, { endpointId: endpoint.id, deliveryId });
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
