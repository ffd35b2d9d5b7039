/**
 * Electron's built-in `autoUpdater` (docs/feeds.md "Electron's autoUpdater
 * (Squirrel)"): Squirrel.Mac's update JSON and Squirrel.Windows' `RELEASES`
 * file, and when a client is offered a release at all.
 */
import { createHash } from "node:crypto";
import { compareVersionLooks } from "../publishing/latest.ts";
import type { ReleasePolicy } from "../store/release_policy.ts";
import type { ArtifactStore } from "../storage/types.ts";
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

/**
 * The SHA-1 of a release's artifact (Squirrel.Windows checks it), read from
 * the store once per release record and kept with it.
 */
export function createSha1Memo(artifacts: ArtifactStore): (release: Release) => Promise<string> {
  const known = new WeakMap<Release, Promise<string>>();
  const compute = async (release: Release) => {
    const opened = await artifacts.open(release.storage_key);
    if (opened === null) throw new Error(`artifact of release ${release.id} is missing`);
    const hash = createHash("sha1");
    for await (const chunk of await opened.read(0, opened.size)) hash.update(chunk);
    return hash.digest("hex");
  };
  return (release) => {
    let sha1 = known.get(release);
    if (sha1 === undefined) {
      sha1 = compute(release);
      known.set(release, sha1);
      sha1.catch(() => known.delete(release));
    }
    return sha1;
  };
}
