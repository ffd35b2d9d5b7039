/**
 * Velopack's release feed, `releases.{channel}.json` (docs/feeds.md
 * "Velopack"): `{ "Assets": [...] }` with the release offered as its `Full`
 * asset and, when the service has built one from the client's
 * `localVersion`, that one `Delta`, so the client downloads one delta and
 * never a chain. Asset file names carry the release ids the download route
 * resolves, and end as Velopack's own do (`-full.nupkg`, `-delta.nupkg`;
 * the client finds its installed package by that suffix).
 */
import type { Release } from "../releases/types.ts";
import type { VelopackDelta, VelopackPackage } from "../artifact_records/velopack.ts";

/** The file name of Velopack's feed: `releases.{channel}.json`. */
const FEED_NAME = /^releases\.[A-Za-z0-9._-]{1,64}\.json$/;
const FULL_NAME = /-r([1-9][0-9]{0,14})-full\.nupkg$/;
const DELTA_NAME = /-r([1-9][0-9]{0,14})-from-r([1-9][0-9]{0,14})-delta\.nupkg$/;

export type VelopackAssetName =
  | { kind: "full"; releaseId: number }
  | { kind: "delta"; releaseId: number; fromReleaseId: number };

export function isVelopackFeedName(name: string): boolean {
  return FEED_NAME.test(name);
}

/** What an asset's file name names, or null. */
export function parseAssetName(name: string): VelopackAssetName | null {
  const delta = DELTA_NAME.exec(name);
  if (delta !== null) {
    return { kind: "delta", releaseId: Number(delta[1]), fromReleaseId: Number(delta[2]) };
  }
  const full = FULL_NAME.exec(name);
  return full === null ? null : { kind: "full", releaseId: Number(full[1]) };
}

/** A package id and version as they may stand in a file name. */
function stem(pkg: VelopackPackage): string {
  return `${pkg.package_id}-${pkg.version}`.replace(/[^A-Za-z0-9._+-]/g, "_");
}

export function fullFileName(pkg: VelopackPackage): string {
  return `${stem(pkg)}-r${pkg.release_id}-full.nupkg`;
}

export function deltaFileName(pkg: VelopackPackage, delta: VelopackDelta): string {
  return `${stem(pkg)}-r${pkg.release_id}-from-r${delta.from_release_id}-delta.nupkg`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * The feed JSON offering `release` (read as `pkg`) and, when given, the delta
 * to it from the client's version.
 */
export function velopackFeedJson(
  { release, pkg, delta }: {
    release: Pick<Release, "release_notes" | "size_bytes" | "checksum_sha256">;
    pkg: VelopackPackage;
    delta: VelopackDelta | null;
  },
): string {
  const notes = {
    NotesMarkdown: release.release_notes,
    NotesHtml: release.release_notes === ""
      ? ""
      : `<p>${escapeHtml(release.release_notes).replace(/\r?\n/g, "<br>")}</p>`,
  };
  const assets = [{
    PackageId: pkg.package_id,
    Version: pkg.version,
    Type: "Full",
    FileName: fullFileName(pkg),
    SHA1: pkg.sha1,
    SHA256: release.checksum_sha256.toUpperCase(),
    Size: release.size_bytes,
    ...notes,
  }];
  if (delta !== null) {
    assets.push({
      PackageId: pkg.package_id,
      Version: pkg.version,
      Type: "Delta",
      FileName: deltaFileName(pkg, delta),
      SHA1: delta.sha1,
      SHA256: delta.checksum_sha256.toUpperCase(),
      Size: delta.size_bytes,
      ...notes,
    });
  }
  return JSON.stringify({ Assets: assets });
}
