/** Read-only figures for the admin dashboard. */
import { releaseIndexPrefix, releasesPrefix } from "./keys.ts";
import type { Release } from "./types.ts";

/** Counts releases in every state by walking the small per-project index entries. */
export async function countReleases(kv: Deno.Kv): Promise<number> {
  let count = 0;
  for await (const _ of kv.list({ prefix: releaseIndexPrefix() })) count++;
  return count;
}

/** The most recently created releases of all projects (ids grow with creation time). */
export async function listRecentReleases(kv: Deno.Kv, limit: number): Promise<Release[]> {
  const releases: Release[] = [];
  for await (
    const entry of kv.list<Release>({ prefix: releasesPrefix() }, { reverse: true, limit })
  ) {
    releases.push(entry.value);
  }
  return releases;
}
