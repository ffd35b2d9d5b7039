/**
 * Release reads and edits of the publishing API (docs/publishing.md): one
 * page of a project's releases, the latest pointer's id, and editing the
 * text of a release (notes, build). State changes and the latest pointer's
 * rules are in releases.ts.
 */
import { RELEASE_NOTES_MAX_LENGTH, VERSION_MAX_LENGTH } from "../lib/limits.ts";
import { serializedProjectWrite } from "./atomic.ts";
import { changeOp, commitChange } from "./cache.ts";
import { NotFoundError } from "./errors.ts";
import { getManyEntries } from "./get_many.ts";
import {
  latestReleaseKey,
  releaseByProjectKey,
  releaseKey,
  releasesByProjectPrefix,
} from "./keys.ts";
import type { Release } from "./types.ts";
import { requireText } from "./validate.ts";

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

/** The text of a release that may change after upload. */
export interface ReleaseTextEdit {
  build?: string;
  release_notes?: string;
}

/** Changes a release's build label and/or notes; the artifact and everything else stay. */
export async function editReleaseText(
  kv: Deno.Kv,
  id: number,
  edit: ReleaseTextEdit,
): Promise<Release> {
  const fields: ReleaseTextEdit = {};
  if (edit.build !== undefined) {
    fields.build = requireText("build", edit.build, { max: VERSION_MAX_LENGTH });
  }
  if (edit.release_notes !== undefined) {
    fields.release_notes = requireText("release_notes", edit.release_notes, {
      max: RELEASE_NOTES_MAX_LENGTH,
    });
  }
  const first = (await kv.get<Release>(releaseKey(id))).value;
  if (first === null) throw new NotFoundError("release not found");
  // The latest pointer's cache entry holds the release record too: serialized like the pointer's moves.
  return await serializedProjectWrite(kv, first.project_id, () =>
    commitChange(kv, async () => {
      const entry = await kv.get<Release>(releaseKey(id));
      if (entry.value === null) throw new NotFoundError("release not found");
      const release: Release = { ...entry.value, ...fields };
      const changed = [["release", id], ["latest_release", release.project_id]] as const;
      const commit = await changeOp(kv, changed).check(entry).set(releaseKey(id), release)
        .commit();
      return { commit, value: release, changed };
    }));
}
