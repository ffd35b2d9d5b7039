/**
 * Where the TUF repositories live (docs/tuf.md): each project's under
 * `/tuf/<slug>/`, its metadata under `metadata/` and its targets under
 * `targets/`, beside the client API and the updater feeds.
 */

export const TUF_PREFIX = "/tuf";

/** The metadata files a client asks for: `timestamp.json`, `<n>.root.json`, `<n>.snapshot.json`… */
const METADATA_FILE = /^(?:(\d{1,15})\.)?(root|snapshot|targets|timestamp)\.json$/;

/** The role and version (null: the newest) a metadata file name asks for; null when none. */
export function parseMetadataFile(
  name: string,
): { role: "root" | "snapshot" | "targets" | "timestamp"; version: number | null } | null {
  const match = METADATA_FILE.exec(name);
  if (match === null) return null;
  const role = match[2] as "root" | "snapshot" | "targets" | "timestamp";
  const version = match[1] === undefined ? null : Number(match[1]);
  // Only the newest timestamp exists; versioned names are the others'.
  if (role === "timestamp" && version !== null) return null;
  return { role, version };
}

/** The TUF routes' own errors, beside the client API's (src/http/errors.ts). */
export const TUF_ERRORS = {
  /** 503: the metadata cannot be signed (no online key the root lists) and none is stored. */
  unavailable: "tuf metadata not available",
} as const;
