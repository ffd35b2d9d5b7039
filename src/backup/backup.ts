/**
 * `deno task backup <dir>`: a consistent copy of the KV entries and of the
 * artifacts they reference, taken while the service keeps running.
 *
 * 1. A snapshot of all KV entries (src/kv/entries.ts: full passes until two
 *    agree), from a second connection to the KV file; backup only reads.
 * 2. `kv.jsonl` from that snapshot, each block map in it whole or not at all
 *    (a map being written has its pieces committed before its record).
 * 3. The artifact of every release in the snapshot, from the data dir or the
 *    s3 bucket. Artifacts are complete (fsynced file, completed multipart
 *    upload) before their release record is committed and never change
 *    afterwards, so every artifact a snapshot references is complete; each
 *    copy is checked against the release's size and SHA-256.
 * 4. Only when asked, the private key files of the signing and Sparkle keys
 *    (signing_keys.ts); without, it counts the ones left out.
 *    Webhook endpoints' secrets likewise: without `includeWebhookSecrets`
 *    each endpoint is written with no secret (restored, it needs a new one).
 * 5. `manifest.json` last: its presence marks a complete backup.
 */
import { createPrivateFile, makePrivateDir, PRIVATE_DIR_MODE } from "../lib/private_files.ts";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { countRecords, leaveOutWebhookSecrets, releasesIn } from "./records.ts";
import { type KvRecord, snapshotEntries } from "../kv/entries.ts";
import { keepWholeBlockMaps } from "../artifact_records/block_maps.ts";
import { BACKUP_SKIPPED_PREFIXES } from "../kv/keys.ts";
import { encodeRecord } from "./codec.ts";
import { backupSigningKeys, countKeyFiles } from "./signing_keys.ts";
import {
  ARTIFACTS_DIR,
  BackupError,
  FORMAT,
  FORMAT_VERSION,
  KV_FILE,
  type Manifest,
  MANIFEST_FILE,
  type ManifestArtifact,
  STORAGE_KEY_PATTERN,
  writeStreamHashed,
} from "./format.ts";
import { type ArtifactStore, createFsStore } from "../storage/mod.ts";
import { pathExists } from "../lib/files.ts";
import { isRemoteKv } from "../lib/config.ts";
import { createStore } from "../kv/store.ts";

export interface DataLocation {
  /** The data dir: where the signing keys' files are (`signing-keys/`). */
  dataDir?: string;
  kvPath: string;
  artifactsDir: string;
  /** Where the artifacts are; by default the files of `artifactsDir`. */
  artifacts?: ArtifactStore;
}

export function artifactStoreOf(location: DataLocation): ArtifactStore {
  return location.artifacts ?? createFsStore(location.artifactsDir);
}

/** What a backup holds besides the KV entries and artifacts; nothing secret by default. */
export interface BackupOptions {
  /** The private key files of `source.dataDir`: the signing keys and the Sparkle keys. */
  includeSigningKeys?: boolean;
  /** The webhook endpoints' signing secrets (left out: each endpoint is kept without one). */
  includeWebhookSecrets?: boolean;
}

/** The manifest of a written backup, and the private key files it left out. */
export interface WrittenBackup extends Manifest {
  /** Key files of the data dir not in the backup (without `includeSigningKeys`). */
  keyFilesLeftOut: { signing: number; sparkle: number };
}

/** Writes a backup of `source` into `targetDir`, which must not exist yet. */
export async function createBackup(
  source: DataLocation,
  targetDir: string,
  { includeSigningKeys = false, includeWebhookSecrets = false }: BackupOptions = {},
): Promise<WrittenBackup> {
  requireLocalKv(source.kvPath);
  if (includeSigningKeys && source.dataDir === undefined) {
    throw new BackupError("the signing keys are asked for but the data dir is not known");
  }
  await requireDatabase(source.kvPath);
  await createEmptyDir(targetDir);
  try {
    const kv = await Deno.openKv(source.kvPath);
    const store = createStore(kv);
    let snapshot;
    try {
      snapshot = await snapshotEntries(store);
    } finally {
      kv.close();
    }
    const whole = keepWholeBlockMaps(snapshot.records);
    const records = includeWebhookSecrets ? whole : leaveOutWebhookSecrets(whole).records;
    const kvSha256 = await writeKvFile(join(targetDir, KV_FILE), records);
    const artifacts = await copyArtifacts(records, artifactStoreOf(source), targetDir);
    const manifest: Manifest = {
      format: FORMAT,
      format_version: FORMAT_VERSION,
      created_at: new Date().toISOString(),
      kv: {
        file: KV_FILE,
        entries: records.length,
        sha256: kvSha256,
        skipped_prefixes: BACKUP_SKIPPED_PREFIXES.map((prefix) => prefix.map(String)),
        snapshot_passes: snapshot.passes,
      },
      counts: countRecords(records),
      artifacts,
      webhook_secrets: includeWebhookSecrets ? "included" : "left_out",
    };
    let keyFilesLeftOut = { signing: 0, sparkle: 0 };
    if (includeSigningKeys) {
      Object.assign(manifest, await backupSigningKeys(source.dataDir!, targetDir));
    } else if (source.dataDir !== undefined) {
      keyFilesLeftOut = await countKeyFiles(source.dataDir);
    }
    await writeSynced(join(targetDir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + "\n");
    return { ...manifest, keyFilesLeftOut };
  } catch (error) {
    // Leave no half backup behind that could be mistaken for a complete one.
    await Deno.remove(targetDir, { recursive: true }).catch(() => {});
    throw error;
  }
}

/** Refuses a KV file that does not exist: opening it would create an empty database. */
export async function requireDatabase(kvPath: string): Promise<void> {
  if (isRemoteKv(kvPath)) return;
  if (kvPath === ":memory:" || !(await pathExists(kvPath))) {
    throw new BackupError(`no database at ${kvPath} (check APP_DATA_DIR / APP_KV_PATH)`);
  }
}

export function requireLocalKv(kvPath: string): void {
  if (isRemoteKv(kvPath) || kvPath === ":memory:") {
    throw new BackupError(`backup and restore need a local KV file, not ${kvPath}`);
  }
}

async function createEmptyDir(dir: string): Promise<void> {
  try {
    // Not recursive for the last step: an existing directory is refused.
    await makePrivateDir(join(dir, ".."));
    await Deno.mkdir(dir, { mode: PRIVATE_DIR_MODE });
    await Deno.chmod(dir, PRIVATE_DIR_MODE);
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) {
      throw new BackupError(`${dir} already exists; give a new directory for the backup`);
    }
    throw error;
  }
}

async function writeKvFile(path: string, records: readonly KvRecord[]): Promise<string> {
  const file = await createPrivateFile(path);
  const hash = createHash("sha256");
  const encoder = new TextEncoder();
  try {
    // Lines are grouped into chunks of about 1 MiB to keep writes few.
    let chunk = "";
    const flush = async () => {
      const bytes = encoder.encode(chunk);
      hash.update(bytes);
      for (let written = 0; written < bytes.byteLength;) {
        written += await file.write(bytes.subarray(written));
      }
      chunk = "";
    };
    for (const record of records) {
      chunk += encodeRecord(record) + "\n";
      if (chunk.length > 1_000_000) await flush();
    }
    await flush();
    await file.sync();
  } finally {
    file.close();
  }
  return hash.digest("hex");
}

async function copyArtifacts(
  records: readonly KvRecord[],
  store: ArtifactStore,
  targetDir: string,
): Promise<ManifestArtifact[]> {
  await makePrivateDir(join(targetDir, ARTIFACTS_DIR));
  const copied = new Map<string, ManifestArtifact>();
  for (const release of releasesIn(records)) {
    const key = release.storage_key;
    if (copied.has(key)) continue;
    if (!STORAGE_KEY_PATTERN.test(key)) {
      throw new BackupError(
        `release ${release.id} has an invalid storage key ${JSON.stringify(key)}`,
      );
    }
    const from = store.where(key);
    const opened = await store.open(key);
    if (opened === null) {
      throw new BackupError(`the artifact of release ${release.id} is missing: ${from}`);
    }
    const copy = await writeStreamHashed(
      await opened.read(0, opened.size),
      join(targetDir, ARTIFACTS_DIR, key),
    );
    if (copy.size !== release.size_bytes || copy.sha256 !== release.checksum_sha256) {
      throw new BackupError(
        `the artifact of release ${release.id} (${from}) is damaged: ` +
          `${copy.size} bytes with SHA-256 ${copy.sha256}, ` +
          `expected ${release.size_bytes} bytes with SHA-256 ${release.checksum_sha256}`,
      );
    }
    copied.set(key, { storage_key: key, sha256: copy.sha256, size_bytes: copy.size });
  }
  return [...copied.values()];
}

async function writeSynced(path: string, text: string): Promise<void> {
  const file = await createPrivateFile(path);
  try {
    const bytes = new TextEncoder().encode(text);
    for (let written = 0; written < bytes.byteLength;) {
      written += await file.write(bytes.subarray(written));
    }
    await file.sync();
  } finally {
    file.close();
  }
}
