/**
 * `deno task restore <dir>`: rebuilds an empty data dir from a backup.
 *
 * It checks the manifest and the SHA-256 of kv.jsonl first, refuses a target
 * that already has a KV file or artifacts, places each artifact (in the data
 * dir or the s3 bucket) and keeps it only when its SHA-256 and size match the
 * manifest, puts back the signing and Sparkle keys' files when the backup
 * holds them (signing_keys.ts), then imports the KV entries in batched atomic
 * commits, each block map only whole (keepWholeBlockMaps: a backup made by an
 * older version may hold part of one; the restored service builds it again), and tells which key files the restored records name but the data
 * dir lacks (src/signing/key_file_check.ts). On any failure it removes what it created, so the
 * data dir is empty again and the restore can simply be rerun.
 */
import { KV_FILE_SUFFIXES, makePrivateDir, openPrivateKv } from "../lib/private_files.ts";
import { join } from "node:path";
import { importEntries, isKvEmpty, type KvRecord } from "../kv/entries.ts";
import { listWebhookEndpoints } from "../webhooks/outbox.ts";
import type { ArtifactStore } from "../storage/mod.ts";
import { artifactStoreOf, type DataLocation, requireLocalKv } from "./backup.ts";
import { decodeRecord } from "./codec.ts";
import {
  ARTIFACTS_DIR,
  BackupError,
  FORMAT,
  FORMAT_VERSION,
  hashFile,
  KV_FILE,
  type Manifest,
  MANIFEST_FILE,
  readLines,
  STORAGE_KEY_PATTERN,
} from "./format.ts";
import { pathExists } from "../lib/files.ts";
import { requireNoSigningKeys, restoreSigningKeys } from "./signing_keys.ts";
import { createStore } from "../kv/store.ts";
import { keepWholeBlockMaps } from "../artifact_records/block_maps.ts";
import { findMissingKeyFiles, type MissingKeyFiles } from "../signing/key_file_check.ts";

/** The manifest of a restored backup, and what the restored data lacks. */
export interface RestoredBackup extends Manifest {
  /** Webhook endpoints restored without a secret: each needs a new one (docs/webhooks.md). */
  endpointsWithoutSecret: number;
  /** Key files the restored records name but the data dir lacks; null when it is not known. */
  missingKeyFiles: MissingKeyFiles | null;
}

export async function restoreBackup(
  sourceDir: string,
  target: DataLocation,
): Promise<RestoredBackup> {
  requireLocalKv(target.kvPath);
  const manifest = await readManifest(sourceDir);
  const kvFile = join(sourceDir, KV_FILE);
  const { sha256 } = await hashFile(kvFile);
  if (sha256 !== manifest.kv.sha256) {
    throw new BackupError(
      `${kvFile} does not match its SHA-256 in the manifest: the backup is damaged`,
    );
  }
  const store = artifactStoreOf(target);
  await requireEmptyTarget(target, store);
  const keyFiles = { signing_keys: manifest.signing_keys, sparkle_keys: manifest.sparkle_keys };
  if ((manifest.signing_keys?.length ?? 0) + (manifest.sparkle_keys?.length ?? 0) > 0) {
    if (target.dataDir === undefined) {
      throw new BackupError("the backup holds signing keys but the data dir is not known");
    }
    await requireNoSigningKeys(keyFiles, target.dataDir);
  }

  const createdArtifactsDir = store.kind === "fs" && !(await pathExists(target.artifactsDir));
  const placed: string[] = [];
  const keyFilesWritten: string[] = [];
  let kvCreated = false;
  try {
    if (store.kind === "fs") await makePrivateDir(target.artifactsDir);
    for (const artifact of manifest.artifacts) {
      await restoreArtifact(sourceDir, artifact, store);
      placed.push(artifact.storage_key);
    }
    await restoreSigningKeys(sourceDir, {
      keys: keyFiles,
      dataDir: target.dataDir ?? "",
      written: keyFilesWritten,
    });
    await makePrivateDir(join(target.kvPath, ".."));
    kvCreated = true;
    const kv = await openPrivateKv(target.kvPath);
    const records = createStore(kv);
    try {
      if (!(await isKvEmpty(records))) throw new BackupError(`${target.kvPath} is not empty`);
      const read = await Array.fromAsync(readRecords(kvFile));
      if (read.length !== manifest.kv.entries) {
        throw new BackupError(
          `kv.jsonl holds ${read.length} entries, the manifest says ${manifest.kv.entries}`,
        );
      }
      await importEntries(records, keepWholeBlockMaps(read));
      const endpoints = await listWebhookEndpoints(records);
      return {
        ...manifest,
        endpointsWithoutSecret: endpoints.filter((endpoint) => endpoint.secret === null).length,
        missingKeyFiles: target.dataDir === undefined
          ? null
          : await findMissingKeyFiles(records, target.dataDir),
      };
    } finally {
      kv.close();
    }
  } catch (error) {
    for (const file of keyFilesWritten) await Deno.remove(file).catch(() => {});
    if (kvCreated) {
      for (const suffix of KV_FILE_SUFFIXES) {
        await Deno.remove(target.kvPath + suffix).catch(() => {});
      }
    }
    if (createdArtifactsDir) {
      await Deno.remove(target.artifactsDir, { recursive: true }).catch(() => {});
    } else {
      for (const key of placed) await store.remove(key).catch(() => {});
    }
    throw error;
  }
}

async function readManifest(sourceDir: string): Promise<Manifest> {
  const path = join(sourceDir, MANIFEST_FILE);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new BackupError(`${path} is missing: not a backup, or an incomplete one`);
    }
    throw new BackupError(`${path} is not readable JSON: ${(error as Error).message}`);
  }
  if (manifest?.format !== FORMAT) throw new BackupError(`${path} is not a backup manifest`);
  if (manifest.format_version !== FORMAT_VERSION) {
    throw new BackupError(
      `backup format version ${manifest.format_version} is not supported (this version reads ${FORMAT_VERSION})`,
    );
  }
  return manifest;
}

/** Refuses a data dir that already holds a KV database, or any artifact in its store. */
async function requireEmptyTarget(target: DataLocation, store: ArtifactStore): Promise<void> {
  for (const suffix of KV_FILE_SUFFIXES) {
    if (await pathExists(target.kvPath + suffix)) {
      throw new BackupError(
        `${
          target.kvPath + suffix
        } exists: restore only into an empty data dir (stop the service, ` +
          `point APP_DATA_DIR at a new directory)`,
      );
    }
  }
  const found = await store.findAny();
  if (found !== null) {
    throw new BackupError(
      `${store.where("")} is not empty (${found}): restore only into an empty data dir` +
        (store.kind === "s3" ? " and an empty bucket (or APP_S3_PREFIX)" : ""),
    );
  }
}

/**
 * Stores one artifact of the backup under its key and checks the stored bytes
 * against the manifest; a mismatch removes it again.
 */
async function restoreArtifact(
  sourceDir: string,
  artifact: Manifest["artifacts"][number],
  store: ArtifactStore,
): Promise<void> {
  if (!STORAGE_KEY_PATTERN.test(artifact.storage_key)) {
    throw new BackupError(
      `invalid storage key in the manifest: ${JSON.stringify(artifact.storage_key)}`,
    );
  }
  const from = join(sourceDir, ARTIFACTS_DIR, artifact.storage_key);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(from, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) throw new BackupError(`${from} is missing`);
    throw error;
  }
  const copy = await store.put(artifact.storage_key, file.readable);
  if (copy.checksum_sha256 !== artifact.sha256 || copy.size_bytes !== artifact.size_bytes) {
    await store.remove(artifact.storage_key);
    throw new BackupError(
      `${from} is damaged: ${copy.size_bytes} bytes with SHA-256 ${copy.checksum_sha256}, ` +
        `expected ${artifact.size_bytes} bytes with SHA-256 ${artifact.sha256}`,
    );
  }
}

async function* readRecords(path: string): AsyncGenerator<KvRecord> {
  let line = 0;
  for await (const text of readLines(path)) {
    line++;
    if (text.trim() === "") continue;
    let record;
    try {
      record = decodeRecord(text);
    } catch (error) {
      throw new BackupError(`${path} line ${line}: ${(error as Error).message}`);
    }
    yield record;
  }
}
