/**
 * Release reads of the publishing API (docs/publishing.md): one page of a
 * project's releases and the latest pointer's id. Editing a release's text
 * is `editRelease` (edits.ts); state changes and the latest pointer's rules
 * are in releases.ts.
 */
import { getManyEntries } from "../kv/get_many.ts";
import {
  latestReleaseKey,
  releaseByProjectKey,
  releaseKey,
  releasesByProjectPrefix,
} from "../kv/keys.ts";
import { scanPage } from "../kv/paging.ts";
import type { Release } from "./types.ts";
import type { Store } from "../kv/store.ts";

/** Largest page of releases. */
export const RELEASE_PAGE_MAX = 100;

/**
 * Up to `limit` releases of a project in every state, newest (highest id)
 * first, older than release id `before` when given; `next` is the id to pass
 * as `before` for the next page, or null after the last.
 */
export async function listReleasePage(
  store: Store,
  projectId: number,
  { limit, before }: { limit: number; before?: number },
): Promise<{ releases: Release[]; next: number | null }> {
  const page = await scanPage<number, Release>(store.kv, {
    prefix: releasesByProjectPrefix(projectId),
    reverse: true,
    limit,
    cursor: { after: before === undefined ? undefined : releaseByProjectKey(projectId, before) },
    // The page and one more entry, to tell whether there is a next page.
    maxScan: limit + 1,
    load: async (entries) =>
      (await getManyEntries<Release>(store.kv, entries.map((entry) => releaseKey(entry.value))))
        .map((entry) => entry.value),
  });
  return {
    releases: page.rows.map(({ row }) => row),
    next: page.after === null ? null : Number(page.after[page.after.length - 1]),
  };
}

/** The id the project's latest pointer names, or null (read from KV, not the read cache). */
export async function getLatestReleaseId(store: Store, projectId: number): Promise<number | null> {
  return (await store.kv.get<number | null>(latestReleaseKey(projectId))).value ?? null;
}
