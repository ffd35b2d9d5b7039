/**
 * Release reads of the publishing API (docs/publishing.md): one page of a
 * project's releases and the latest pointer's id. Editing a release's text
 * is `editRelease` (edits.ts); state changes and the latest pointer's rules
 * are in releases.ts.
 */
import { getManyEntries } from "./get_many.ts";
import {
  latestReleaseKey,
  releaseByProjectKey,
  releaseKey,
  releasesByProjectPrefix,
} from "./keys.ts";
import type { Release } from "./types.ts";

/** Largest page of releases. */
export const RELEASE_PAGE_MAX = 100;

/**
 * Up to `limit` releases of a project in every state, newest (highest id)
 * first, older than release id `before` when given; `next` is the id to pass
 * as `before` for the next page, or null after the last.
 */
export async function listReleasePage(
  kv: Deno.Kv,
  projectId: number,
  { limit, before }: { limit: number; before?: number },
): Promise<{ releases: Release[]; next: number | null }> {
  const selector: Deno.KvListSelector = before === undefined
    ? { prefix: releasesByProjectPrefix(projectId) }
    : { prefix: releasesByProjectPrefix(projectId), end: releaseByProjectKey(projectId, before) };
  const ids: number[] = [];
  for await (const entry of kv.list<number>(selector, { reverse: true, limit: limit + 1 })) {
    ids.push(entry.value);
  }
  const more = ids.length > limit;
  const page = ids.slice(0, limit);
  const entries = await getManyEntries<Release>(kv, page.map(releaseKey));
  return {
    releases: entries.flatMap((entry) => entry.value === null ? [] : [entry.value]),
    next: more ? page[page.length - 1] : null,
  };
}

/** The id the project's latest pointer names, or null (read from KV, not the read cache). */
export async function getLatestReleaseId(kv: Deno.Kv, projectId: number): Promise<number | null> {
  return (await kv.get<number | null>(latestReleaseKey(projectId))).value ?? null;
}
