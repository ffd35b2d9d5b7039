/**
 * The webhook event model (docs/webhooks.md "Events"): the kinds an endpoint
 * subscribes to and the JSON body every delivery carries. The kinds live with
 * the outbox (src/webhooks/outbox.ts), which enqueues events in the writes
 * that cause them.
 */
export {
  isWebhookEventKind,
  WEBHOOK_EVENT_KINDS,
  WEBHOOK_TEST_EVENT,
  type WebhookEventBody,
  type WebhookEventKind,
} from "./outbox.ts";
