/**
 * Who gets a staged rollout's release (docs/rollouts.md): a stable hash of
 * the release id and the client's identity puts each client in one of
 * 10,000 buckets; a client whose bucket is below the percentage × 100 gets
 * the release. The identity is the install id the client sends
 * (`X-Install-Id`, or electron-updater's `x-user-staging-id` on the feeds),
 * else the API key's id. The same client gets the same answer on every
 * request and every instance; widening a rollout only adds clients.
 */
import type { LatestView, LiveRollout } from "./latest_view.ts";
import type { Release } from "./types.ts";

/** What the offer reads of a client's API key (an `ApiKey` passes). */
export interface OfferKey {
  id: number;
  tags: readonly string[];
  rollout_tags?: readonly string[];
}

/**
 * The rollout tags of a key (docs/rollouts.md "Who gets the release"). A
 * record without the field keeps the rule it was made under: its `tags` make
 * it a tester, whatever its mode.
 */
export function keyRolloutTags(key: Pick<OfferKey, "tags" | "rollout_tags">): readonly string[] {
  return key.rollout_tags ?? key.tags;
}

/** The request header carrying a client's install id. */
export const INSTALL_ID_HEADER = "x-install-id";
/** electron-updater's install id header, read on the feeds. */
export const STAGING_ID_HEADER = "x-user-staging-id";

/** 1–128 printable ASCII characters; anything else is ignored (the key is used). */
const INSTALL_ID = /^[\x21-\x7e]{1,128}$/;

/** The identity rollouts use: `install:<id>` when a usable install id is sent, else `key:<id>`. */
export function clientIdentity(installId: string | null | undefined, key: OfferKey): string {
  return installId != null && INSTALL_ID.test(installId) ? `install:${installId}` : `key:${key.id}`;
}

/** The bucket (0–9999) of a client for a release: FNV-1a over the text, then a 32-bit mix. */
export function rolloutBucket(releaseId: number, identity: string): number {
  const text = `${releaseId}\u0000${identity}`;
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) % 10_000;
}

/** The percentage in force at `nowMs`: 0 when halted, else the greatest of the base and the steps reached. */
export function rolloutPercentage(
  rollout: NonNullable<LatestView["rollout"]>,
  nowMs: number,
): number {
  if (rollout.record.halted) return 0;
  let percentage = rollout.record.percentage;
  for (const step of rollout.steps) {
    if (step.atMs > nowMs) break;
    if (step.percentage > percentage) percentage = step.percentage;
  }
  return percentage;
}

/**
 * What `view` offers at `nowMs`, before any client is placed: the latest
 * pointer's release to everyone (`rollout` null, or `halted` when a halted
 * rollout sends everyone back to it), or a rollout's split at its
 * percentage in force. `releaseFor` places each client by it; the admin
 * project page says it in words (src/releases/latest_notes.ts).
 */
export interface Offer {
  /** The latest pointer's release: every client outside a running rollout gets it. */
  latest: Release | null;
  /** The rollout in force, running or halted; null without one. */
  rollout: LiveRollout | null;
  /** The rollout's percentage now: 0 when halted. */
  percentage: number;
}

export function offerAt(view: LatestView, nowMs: number): Offer {
  const rollout = view.rollout;
  return {
    latest: view.release,
    rollout,
    percentage: rollout === null ? 0 : rolloutPercentage(rollout, nowMs),
  };
}

/**
 * The release `view` offers a client: the latest pointer's, or the
 * rollout's when the client is in it (a key whose rollout tags hold the
 * tester tag, whatever its scope mode, or its bucket is below
 * the percentage). A halted rollout offers everyone the latest.
 */
export function releaseFor(
  view: LatestView,
  client: { key: OfferKey; installId: () => string | null | undefined; nowMs: number },
): Release | null {
  // The common case answers without building an offer.
  if (view.rollout === null) return view.release;
  const { rollout, percentage } = offerAt(view, client.nowMs);
  if (rollout === null || rollout.record.halted) return view.release;
  const tag = rollout.record.tester_tag;
  if (tag !== null && keyRolloutTags(client.key).includes(tag)) return rollout.release;
  if (percentage <= 0) return view.release;
  if (percentage >= 100) return rollout.release;
  const identity = clientIdentity(client.installId(), client.key);
  return rolloutBucket(rollout.release.id, identity) < percentage * 100
    ? rollout.release
    : view.release;
}
