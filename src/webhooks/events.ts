/**
 * The webhook event model (docs/webhooks.md "Events"): the kinds an endpoint
 * subscribes to and the JSON body every delivery carries. The kinds live with
 * the store (src/store/webhooks.ts), which enqueues events in the writes that
 * cause them.
 */
export {
  isWebhookEventKind,
  WEBHOOK_EVENT_KINDS,
  WEBHOOK_TEST_EVENT,
  type WebhookEventBody,
  type WebhookEventKind,
} from "../store/webhooks.ts";
