/**
 * The Tauri v2 updater plugin's dynamic-server answer: the latest release as
 * `{ version, notes, pub_date, url, signature }`. The client compares the
 * versions itself; the service always answers the latest release.
 */
import type { Release } from "../releases/types.ts";

/** A path segment of the Tauri endpoint (`{{target}}`, `{{arch}}`, `{{current_version}}`). */
const SEGMENT = /^[A-Za-z0-9._+-]{1,64}$/;

export function isTauriSegment(value: string): boolean {
  return SEGMENT.test(value);
}

/** The JSON of `release`, which must have its signature; `url` is absolute. */
export function tauriFeedJson(
  release: Pick<Release, "version" | "release_notes" | "created_at" | "tauri_signature">,
  url: string,
): string {
  if (release.tauri_signature === undefined) throw new Error("tauri feed of an unsigned release");
  return JSON.stringify({
    version: release.version,
    notes: release.release_notes,
    // `created_at` is `toISOString()`: RFC 3339.
    pub_date: release.created_at,
    url,
    signature: release.tauri_signature,
  });
}
