/**
 * Electron's built-in `autoUpdater` (docs/feeds.md "Electron's autoUpdater
 * (Squirrel)"): Squirrel.Mac's update JSON and Squirrel.Windows' `RELEASES`
 * file, and when a client is offered a release at all.
 */
import { createHash } from "node:crypto";
import { compareVersionLooks } from "../releases/latest_notes.ts";
import type { ReleasePolicy } from "../releases/release_policy.ts";
import { readRecordedArtifact } from "../storage/artifact_work.ts";
import type { ArtifactStore } from "../storage/types.ts";
import { setReleaseSha1 } from "../releases/releases.ts";
import { getActiveReleaseByVersion } from "../releases/release_versions.ts";
import { getSquirrelDelta, type SquirrelDelta } from "../artifact_records/squirrel_deltas.ts";
import type { Store } from "../kv/store.ts";
import type { Release } from "../releases/types.ts";

/** A version segment of the Squirrel URL (the client's, or a file's release's). */
const VERSION_SEGMENT = /^[\x21-\x7e]{1,100}$/;

export function isSquirrelVersion(value: string): boolean {
  return VERSION_SEGMENT.test(value);
}

/**
 * Squirrel.Mac's update JSON: `url` (the zip), `name`, `notes` and `pub_date`
 * in the form of Squirrel.Mac's own example (`2013-09-18T12:29:53+01:00`).
 */
export function squirrelMacJson(
  release: Pick<Release, "version" | "release_notes" | "created_at">,
  url: string,
): string {
  return JSON.stringify({
    url,
    name: release.version,
    notes: release.release_notes,
    pub_date: `${release.created_at.slice(0, 19)}+00:00`,
  });
}

/**
 * A line of Squirrel.Windows' `RELEASES`: `SHA1 URL size`, the SHA-1 in hex
 * and the URL absolute (Squirrel.Windows downloads from it and takes the
 * package name and version from its last segment).
 */
export function releasesLine(entry: { sha1: string; url: string; size: number }): string {
  return `${entry.sha1.toUpperCase()} ${entry.url} ${entry.size}`;
}

/**
 * Whether a client running `clientVersion` is offered `offered` (the release
 * the project's rollout, halt and rollback rules chose for it): never its own
 * version; a release that looks older only when a rollback offers it to a
 * client at most at the rolled-back version (the reference client's
 * `downgrade_available` rule); any other version is offered (Squirrel installs
 * whatever it is given).
 */
export function squirrelOffers(
  offered: Pick<Release, "id" | "version">,
  clientVersion: string,
  policy: ReleasePolicy | null,
): boolean {
  if (offered.version === clientVersion) return false;
  if (compareVersionLooks(offered.version, clientVersion) !== -1) return true;
  const rollback = policy?.rolled_back ?? null;
  if (rollback === null || rollback.to_id !== offered.id) return false;
  const against = compareVersionLooks(clientVersion, rollback.version);
  return against === -1 || against === 0;
}

/** The longest chain of deltas `RELEASES` lists (Squirrel.Windows applies them one by one). */
const MAX_DELTA_CHAIN = 32;

/** A release on the way to the offered one, and its delta package from the one before. */
export interface DeltaStep {
  release: Release;
  delta: SquirrelDelta;
}

/**
 * The deltas that take a client at `clientVersion` to `offered`, oldest
 * first: Squirrel.Windows applies every delta newer than its version when all
 * are there, so they are listed only as a complete chain (the offered
 * release's delta, then the delta of the release it applies to, and so on
 * down to the client's version, each from an older-looking version); an
 * empty list when any link is missing, when `offered` does not look newer
 * (a rollback: deltas only go forward), or past 32 links.
 */
export async function squirrelDeltaChain(
  store: Store,
  { offered, clientVersion }: { offered: Release; clientVersion: string },
): Promise<DeltaStep[]> {
  if (compareVersionLooks(offered.version, clientVersion) !== 1) return [];
  const chain: DeltaStep[] = [];
  let release = offered;
  while (chain.length < MAX_DELTA_CHAIN) {
    const delta = await getSquirrelDelta(store, release.id);
    if (delta === null || compareVersionLooks(delta.from, release.version) !== -1) return [];
    chain.unshift({ release, delta });
    if (delta.from === clientVersion) return chain;
    if (compareVersionLooks(delta.from, clientVersion) !== 1) return [];
    const older = await getActiveReleaseByVersion(store, offered.project_id, delta.from);
    if (older === null) return [];
    release = older;
  }
  return [];
}

/** Most SHA-1s remembered here besides the release records; then the memory starts over. */
const MAX_KNOWN = 10_000;

/**
 * The SHA-1 of a stored file, a release's artifact or a delta package
 * (Squirrel.Windows checks it): the one a release record keeps, else read
 * from the store once per storage key (concurrent asks share the read, the
 * file's SHA-256 checked on the way); a release's is then kept in its record,
 * so later polls on any instance read no artifact.
 */
export function createSha1Keeper(
  store: Store,
  artifacts: ArtifactStore,
): (file: Release | SquirrelDelta) => Promise<string> {
  const known = new Map<string, Promise<string>>();
  const compute = async (file: Release | SquirrelDelta) => {
    const sha1 = await readRecordedArtifact(artifacts, file, async (chunks) => {
      const hash = createHash("sha1");
      for await (const chunk of chunks) hash.update(chunk);
      return hash.digest("hex");
    });
    if (sha1 === null) throw new Error(`artifact ${file.storage_key} is missing or changed`);
    if ("project_id" in file) await setReleaseSha1(store, file, sha1);
    return sha1;
  };
  return (file) => {
    if ("project_id" in file && file.checksum_sha1 !== undefined) {
      return Promise.resolve(file.checksum_sha1);
    }
    let sha1 = known.get(file.storage_key);
    if (sha1 === undefined) {
      if (known.size >= MAX_KNOWN) known.clear();
      sha1 = compute(file);
      known.set(file.storage_key, sha1);
      sha1.catch(() => known.delete(file.storage_key));
    }
    return sha1;
  };
}
