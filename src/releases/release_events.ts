/**
 * Which webhook events a release's change emits (docs/webhooks.md): the
 * rule is the releases'; the outbox (src/webhooks/outbox.ts) takes the
 * events' bodies into the change's commit.
 */
import { addWebhookEvent, releaseEventData } from "../webhooks/outbox.ts";
import type { Release } from "./types.ts";

/**
 * The events of a release write, added to its commit: `release.published` when
 * an active release appears or a draft becomes active, `release.archived`,
 * `release.deleted` (`after` null).
 */
export function addReleaseEvents(
  op: Deno.AtomicOperation,
  before: Release | null,
  after: Release | null,
): Deno.AtomicOperation {
  if (after === null) {
    return before === null ? op : addWebhookEvent(op, "release.deleted", releaseEventData(before));
  }
  if (after.state === "active" && (before === null || before.state === "draft")) {
    addWebhookEvent(op, "release.published", releaseEventData(after));
  } else if (after.state === "archived" && before !== null && before.state !== "archived") {
    addWebhookEvent(op, "release.archived", releaseEventData(after));
  }
  return op;
}
