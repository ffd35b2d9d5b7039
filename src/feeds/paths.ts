/**
 * Where the updater feeds live (docs/feeds.md): every feed and file under
 * `/feeds`, apart from the client API under /api/v1.
 */
import type { Release } from "../store/types.ts";

export const FEEDS_PREFIX = "/feeds";

/**
 * The path of a release's artifact for the updaters: it ends in the
 * release's file name (electron-updater picks files by extension and names
 * the download after the path).
 */
export function feedFilePath(release: Pick<Release, "id" | "filename">): string {
  return `${FEEDS_PREFIX}/files/${release.id}/${encodeURIComponent(release.filename)}`;
}

/** The feeds' own errors, beside the client API's (src/http/errors.ts). */
export const FEED_ERRORS = {
  /** 503 while the background backfill has not yet computed a release's SHA-512. */
  sha512Pending: "release sha512 not computed yet, try again later",
  /** 409: a Tauri feed never offers an unsigned update. */
  tauriSignatureMissing: "release has no tauri signature",
  /** 409: a Sparkle appcast never offers an unsigned update. */
  sparkleSignatureMissing: "release has no sparkle signature",
} as const;

/** How long a client is told to wait while the SHA-512 is computed. */
export const SHA512_RETRY_AFTER_SECONDS = 60;
