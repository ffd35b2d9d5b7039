/**
 * `deno task migrate-artifacts fs-to-s3|s3-to-fs`: copies the artifact of
 * every release from one backend to the other under the same storage key, so
 * that switching APP_STORAGE needs no KV change. Each copy is checked against
 * the release's SHA-256 and size; the source is never changed. Artifacts
 * already in the target are checked (read and hashed) and kept, so the task
 * can be stopped and run again. The service may keep running while it copies;
 * uploads made meanwhile land in the old backend, so stop the service, run the
 * task once more (it copies only what is new), switch APP_STORAGE and start.
 */
import { type ArtifactStore } from "../storage/mod.ts";
import { listAllReleases } from "../releases/releases.ts";
import type { Release } from "../releases/types.ts";
import { BackupError } from "./format.ts";
import { createHash } from "node:crypto";
import type { Store } from "../kv/store.ts";

export interface MigrationResult {
  copied: number;
  /** Already in the target with the right SHA-256 (an earlier run). */
  present: number;
  copiedBytes: number;
}

/** The store the artifacts are copied from, the one they go to, and a line per copy for `progress`. */
export interface MigrationOptions {
  from: ArtifactStore;
  to: ArtifactStore;
  progress?: (line: string) => void;
}

export async function migrateArtifacts(
  store: Store,
  { from, to, progress = () => {} }: MigrationOptions,
): Promise<MigrationResult> {
  const result: MigrationResult = { copied: 0, present: 0, copiedBytes: 0 };
  const seen = new Set<string>();
  for await (const release of listAllReleases(store)) {
    if (seen.has(release.storage_key)) continue;
    seen.add(release.storage_key);
    if (await verifyPresent(to, release)) {
      result.present++;
      continue;
    }
    const source = await from.open(release.storage_key);
    if (source === null) {
      throw new BackupError(
        `the artifact of release ${release.id} is missing: ${from.where(release.storage_key)}`,
      );
    }
    const copy = await to.put(release.storage_key, await source.read(0, source.size));
    if (!matches(release, copy.checksum_sha256, copy.size_bytes)) {
      await to.remove(release.storage_key);
      throw new BackupError(
        `the artifact of release ${release.id} (${from.where(release.storage_key)}) is damaged: ` +
          `${copy.size_bytes} bytes with SHA-256 ${copy.checksum_sha256}, expected ` +
          `${release.size_bytes} bytes with SHA-256 ${release.checksum_sha256}`,
      );
    }
    result.copied++;
    result.copiedBytes += copy.size_bytes;
    progress(`copied release ${release.id}: ${to.where(release.storage_key)}`);
  }
  return result;
}

/** True when the target already holds this artifact intact; throws when it holds other bytes. */
async function verifyPresent(store: ArtifactStore, release: Release): Promise<boolean> {
  const opened = await store.open(release.storage_key);
  if (opened === null) return false;
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of await opened.read(0, opened.size)) {
    hash.update(chunk);
    size += chunk.byteLength;
  }
  if (matches(release, hash.digest("hex"), size)) return true;
  throw new BackupError(
    `${store.where(release.storage_key)} exists with other bytes than release ${release.id}: ` +
      "remove it, then run the task again",
  );
}

function matches(release: Release, sha256: string, size: number): boolean {
  return sha256 === release.checksum_sha256 && size === release.size_bytes;
}
