/**
 * Electron's built-in `autoUpdater` (docs/feeds.md "Electron's autoUpdater
 * (Squirrel)"): Squirrel.Mac's update JSON and Squirrel.Windows' `RELEASES`
 * file, and when a client is offered a release at all.
 */
import { createHash } from "node:crypto";
import { compareVersionLooks } from "../publishing/latest.ts";
import type { ReleasePolicy } from "../store/release_policy.ts";
import { readRecordedArtifact } from "../storage/artifact_work.ts";
import type { ArtifactStore } from "../storage/types.ts";
import { setReleaseSha1 } from "../store/releases.ts";
import type { Store } from "../store/store.ts";
import type { Release } from "../store/types.ts";

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

/** Most SHA-1s remembered here besides the release records; then the memory starts over. */
const MAX_KNOWN = 10_000;

/**
 * The SHA-1 of a release's artifact (Squirrel.Windows checks it): the one the
 * release record keeps, else read from the store once (concurrent asks for
 * one release share the read, its SHA-256 checked on the way) and kept in the
 * record, so later polls on any instance read no artifact.
 */
export function createSha1Keeper(
  store: Store,
  artifacts: ArtifactStore,
): (release: Release) => Promise<string> {
  const known = new Map<number, Promise<string>>();
  const compute = async (release: Release) => {
    const sha1 = await readRecordedArtifact(artifacts, release, async (chunks) => {
      const hash = createHash("sha1");
      for await (const chunk of chunks) hash.update(chunk);
      return hash.digest("hex");
    });
    if (sha1 === null) throw new Error(`artifact of release ${release.id} is missing or changed`);
    await setReleaseSha1(store, release, sha1);
    return sha1;
  };
  return (release) => {
    if (release.checksum_sha1 !== undefined) return Promise.resolve(release.checksum_sha1);
    let sha1 = known.get(release.id);
    if (sha1 === undefined) {
      if (known.size >= MAX_KNOWN) known.clear();
      sha1 = compute(release);
      known.set(release.id, sha1);
      sha1.catch(() => known.delete(release.id));
    }
    return sha1;
  };
}
