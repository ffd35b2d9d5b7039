/**
 * electron-updater's "generic" provider feed (the `latest` YAML file and its siblings):
 * electron-builder's `UpdateInfo` of one release, in YAML.
 */
import { stringify } from "yaml";
import type { Release } from "../releases/types.ts";

/**
 * The file names electron-updater asks for: `{channel}{suffix}` and `.yml`,
 * e.g. latest, latest-mac, latest-linux, latest-linux-arm64, beta-mac. Every
 * one answers the project's latest release (a project is one platform's, or
 * one channel's, line).
 */
const FEED_FILE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}\.yml$/;

export function isElectronFeedFile(name: string): boolean {
  return FEED_FILE.test(name);
}

export interface ElectronFeedOptions {
  /** The URL (or absolute path) the artifact is downloaded from; ends in the file name. */
  fileUrl: string;
  /**
   * electron-updater's staged rollout, 0 to 100: only when a rollout applies
   * (none exists yet: without it every client is offered the update).
   */
  stagingPercentage?: number;
}

/** The feed of `release`, which must have its SHA-512. */
export function electronFeedYaml(
  release: Pick<
    Release,
    "version" | "size_bytes" | "created_at" | "release_notes" | "checksum_sha512"
  >,
  { fileUrl, stagingPercentage }: ElectronFeedOptions,
): string {
  const sha512 = release.checksum_sha512;
  if (sha512 === undefined) throw new Error("electron feed of a release without its SHA-512");
  const info: Record<string, unknown> = {
    version: release.version,
    files: [{ url: fileUrl, sha512, size: release.size_bytes }],
    path: fileUrl,
    sha512,
    releaseDate: release.created_at,
  };
  if (release.release_notes !== "") info.releaseNotes = release.release_notes;
  if (stagingPercentage !== undefined) info.stagingPercentage = stagingPercentage;
  // Every string quoted: electron-updater reads YAML 1.1, where `1.10` is a
  // number and an unquoted ISO time a Date.
  return stringify(info, {
    defaultStringType: "QUOTE_SINGLE",
    defaultKeyType: "PLAIN",
    lineWidth: 0,
  });
}
