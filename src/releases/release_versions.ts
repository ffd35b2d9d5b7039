/** Finding a project's release by its version (the electron feed's file URLs name releases so). */
import { releasesByProjectPrefix } from "../kv/keys.ts";
import { findInReleaseIndex } from "./releases.ts";
import type { Release } from "./types.ts";
import type { Store } from "../kv/store.ts";

/** How many releases are read at a time, newest first. */
const PAGE = 50;

/**
 * The newest active release of the project with exactly `version` (a version
 * may be uploaded more than once), or null. Reads the project's releases
 * newest first, so the versions clients update from and to are found early.
 */
export async function getActiveReleaseByVersion(
  store: Store,
  projectId: number,
  version: string,
): Promise<Release | null> {
  return await findInReleaseIndex(store, {
    prefix: releasesByProjectPrefix(projectId),
    batch: PAGE,
    pick: (release) => release.state === "active" && release.version === version ? release : null,
  });
}
