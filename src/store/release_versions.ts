/** Finding a project's release by its version (the electron feed's file URLs name releases so). */
import { getManyEntries } from "./get_many.ts";
import { releaseKey, releasesByProjectPrefix } from "./keys.ts";
import type { Release } from "./types.ts";

/** How many releases are read at a time, newest first. */
const PAGE = 50;

/**
 * The newest active release of the project with exactly `version` (a version
 * may be uploaded more than once), or null. Reads the project's releases
 * newest first, so the versions clients update from and to are found early.
 */
export async function getActiveReleaseByVersion(
  kv: Deno.Kv,
  projectId: number,
  version: string,
): Promise<Release | null> {
  let ids: number[] = [];
  const look = async (): Promise<Release | null> => {
    const entries = await getManyEntries<Release>(kv, ids.map(releaseKey));
    ids = [];
    for (const { value } of entries) {
      if (value !== null && value.state === "active" && value.version === version) return value;
    }
    return null;
  };
  for await (
    const entry of kv.list<number>({ prefix: releasesByProjectPrefix(projectId) }, {
      reverse: true,
      batchSize: PAGE,
    })
  ) {
    ids.push(entry.value);
    if (ids.length === PAGE) {
      const found = await look();
      if (found !== null) return found;
    }
  }
  return ids.length === 0 ? null : await look();
}
