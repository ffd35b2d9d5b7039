/**
 * The backup directory format (version 1):
 *
 *   <dir>/kv.jsonl            one line per KV entry: {"key": [...], "value": ...} (see codec.ts)
 *   <dir>/artifacts/<key>     the artifact file of each release, by storage key
 *   <dir>/signing-keys/<kid>.pem  only when asked: the signing keys' private files (signing_keys.ts)
 *   <dir>/sparkle-keys/<id>.pem   likewise: the projects' Sparkle keys' private files
 *   <dir>/manifest.json       written last: a backup without it is incomplete
 */
import { createPrivateFile } from "../lib/private_files.ts";
import { createHash } from "node:crypto";

export const FORMAT = "update-distribution-backup";
export const FORMAT_VERSION = 1;
export const KV_FILE = "kv.jsonl";
export const ARTIFACTS_DIR = "artifacts";
export const MANIFEST_FILE = "manifest.json";

/** Storage keys are UUIDs; anything else in a record is refused (no path tricks). */
export { STORAGE_KEY_PATTERN } from "../lib/limits.ts";

export interface ManifestArtifact {
  storage_key: string;
  sha256: string;
  size_bytes: number;
}

/** A signing key's private file in the backup (only with --include-signing-keys). */
export interface ManifestSigningKey {
  kid: string;
  /** SHA-256 of the PEM file. */
  sha256: string;
}

/** A project's Sparkle key's private file in the backup (only with --include-signing-keys). */
export interface ManifestSparkleKey {
  project_id: number;
  /** SHA-256 of the PEM file. */
  sha256: string;
}

export interface Manifest {
  format: typeof FORMAT;
  format_version: typeof FORMAT_VERSION;
  created_at: string;
  kv: {
    file: typeof KV_FILE;
    entries: number;
    /** SHA-256 of kv.jsonl. */
    sha256: string;
    /** Key prefixes that were left out (short-lived state). */
    skipped_prefixes: string[][];
    /** Full passes over the KV until two agreed (see src/kv/entries.ts). */
    snapshot_passes: number;
  };
  counts: { projects: number; releases: number; api_keys: number };
  artifacts: ManifestArtifact[];
  /** Present only when the backup was asked to include the private signing keys. */
  signing_keys?: ManifestSigningKey[];
  /** Likewise, the projects' Sparkle keys' private files. */
  sparkle_keys?: ManifestSparkleKey[];
  /**
   * Whether the webhook endpoints' secrets are in kv.jsonl (only with
   * --include-webhook-secrets); absent in backups made before this was told.
   */
  webhook_secrets?: "included" | "left_out";
}

/** A backup that cannot be made, or a backup/target that cannot be restored. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupError";
  }
}

/** Writes `stream` to a new file `to` (never overwriting) with SHA-256 and size, fsynced. */
export async function writeStreamHashed(
  stream: ReadableStream<Uint8Array>,
  to: string,
): Promise<{ sha256: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  const target = await createPrivateFile(to);
  try {
    for await (const chunk of stream) {
      hash.update(chunk);
      size += chunk.byteLength;
      for (let written = 0; written < chunk.byteLength;) {
        written += await target.write(chunk.subarray(written));
      }
    }
    await target.sync();
  } finally {
    target.close();
  }
  return { sha256: hash.digest("hex"), size };
}

/** SHA-256 and size of a file, streamed. */
export async function hashFile(path: string): Promise<{ sha256: string; size: number }> {
  const file = await Deno.open(path, { read: true });
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of file.readable) {
    hash.update(chunk);
    size += chunk.byteLength;
  }
  return { sha256: hash.digest("hex"), size };
}

/** The lines of a UTF-8 text file, streamed. */
export async function* readLines(path: string): AsyncGenerator<string> {
  const file = await Deno.open(path, { read: true });
  let rest = "";
  for await (const text of file.readable.pipeThrough(new TextDecoderStream())) {
    const lines = (rest + text).split("\n");
    rest = lines.pop()!;
    yield* lines;
  }
  if (rest !== "") yield rest;
}
