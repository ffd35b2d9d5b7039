/**
 * Where the updater feeds live (docs/feeds.md): every feed and file under
 * `/feeds`, apart from the client API under /api/v1.
 */
import type { Release } from "../releases/types.ts";

export const FEEDS_PREFIX = "/feeds";

/**
 * The path of a release's artifact for the updaters: it ends in the
 * release's file name (electron-updater picks files by extension and names
 * the download after the path).
 */
export function feedFilePath(release: Pick<Release, "id" | "filename">): string {
  return `${FEEDS_PREFIX}/files/${release.id}/${encodeURIComponent(release.filename)}`;
}

/**
 * The electron feed's path of a release's artifact, which electron-updater
 * can rewrite: it replaces the new version with the installed one to find
 * the installed release's block map, and adds `.blockmap` (docs/feeds.md).
 */
export function electronFilePath(
  slug: string,
  release: Pick<Release, "version" | "filename">,
): string {
  return `${FEEDS_PREFIX}/electron/${slug}/files/${encodeURIComponent(release.version)}/${
    encodeURIComponent(release.filename)
  }`;
}

/** The path of a Sparkle delta of a release (docs/feeds.md "Sparkle deltas"). */
export function sparkleDeltaPath(
  slug: string,
  delta: { release_id: number; index: number; filename: string },
): string {
  return `${FEEDS_PREFIX}/sparkle/${slug}/deltas/${delta.release_id}/${delta.index}/${
    encodeURIComponent(delta.filename)
  }`;
}

/** A server-made patch's own SHA-256 (hex), on its download. */
export const PATCH_SHA256_HEADER = "x-patch-sha256";
/** The SHA-256 (hex) of the installed file a server-made patch applies to. */
export const PATCH_BASE_SHA256_HEADER = "x-patch-base-sha256";

/** What a block map's URL ends in, beside its file's URL. */
export const BLOCK_MAP_SUFFIX = ".blockmap";

/** The feeds' own errors, beside the client API's (src/http/errors.ts). */
export const FEED_ERRORS = {
  /** 503 while the background backfill has not yet computed a release's SHA-512. */
  sha512Pending: "release sha512 not computed yet, try again later",
  /** 409: a Tauri feed never offers an unsigned update. */
  tauriSignatureMissing: "release has no tauri signature",
  /** 409: a Sparkle appcast never offers an unsigned update. */
  sparkleSignatureMissing: "release has no sparkle signature",
  /** 404 while the background work has not yet made a release's block map. */
  blockMapPending: "release block map not built yet",
  /** 404 while the background work has not built a patch from the installed version. */
  patchPending: "release patch not built yet",
  /** 503 while the background work has not yet read a release's Velopack package. */
  velopackPending: "release velopack package not read yet, try again later",
  /** 409: the release offered is no Velopack package (a `.nupkg` with its `.nuspec`). */
  velopackPackageMissing: "release is not a velopack package",
} as const;

/** How long a client is told to wait while the SHA-512 is computed. */
export const SHA512_RETRY_AFTER_SECONDS = 60;
