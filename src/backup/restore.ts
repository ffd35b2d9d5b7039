/**
 * `deno task restore <dir>`: rebuilds an empty data dir from a backup.
 *
 * It checks the manifest and the SHA-256 of kv.jsonl first, refuses a target
 * that already has a KV file or artifacts, places each artifact only after
 * its SHA-256 and size matched the manifest, then imports the KV entries in
 * batched atomic commits. On any failure it removes what it created, so the
 * data dir is empty again and the restore can simply be rerun.
 */
import { join } from "node:path";
import { importEntries, isKvEmpty, type KvRecord } from "../store/mod.ts";
import { type DataLocation, requireLocalKv } from "./backup.ts";
import { decodeRecord } from "./codec.ts";
import {
  ARTIFACTS_DIR,
  BackupError,
  copyFileHashed,
  exists,
  FORMAT,
  FORMAT_VERSION,
  hashFile,
  KV_FILE,
  type Manifest,
  MANIFEST_FILE,
  readLines,
  STORAGE_KEY_PATTERN,
} from "./format.ts";

/** SQLite's companion files of a KV database file. */
const KV_SIDECARS = ["", "-wal", "-shm", "-journal"];

export async function restoreBackup(sourceDir: string, target: DataLocation): Promise<Manifest> {
  requireLocalKv(target.kvPath);
  const manifest = await readManifest(sourceDir);
  const kvFile = join(sourceDir, KV_FILE);
  const { sha256 } = await hashFile(kvFile);
  if (sha256 !== manifest.kv.sha256) {
    throw new BackupError(
      `${kvFile} does not match its SHA-256 in the manifest: the backup is damaged`,
    );
  }
  await requireEmptyTarget(target);

  const createdArtifactsDir = !(await exists(target.artifactsDir));
  const placed: string[] = [];
  let kvCreated = false;
  try {
    await Deno.mkdir(target.artifactsDir, { recursive: true });
    for (const artifact of manifest.artifacts) {
      placed.push(await restoreArtifact(sourceDir, artifact, target.artifactsDir));
    }
    await Deno.mkdir(join(target.kvPath, ".."), { recursive: true });
    kvCreated = true;
    const kv = await Deno.openKv(target.kvPath);
    try {
      if (!(await isKvEmpty(kv))) throw new BackupError(`${target.kvPath} is not empty`);
      const written = await importEntries(kv, readRecords(kvFile));
      if (written !== manifest.kv.entries) {
        throw new BackupError(
          `kv.jsonl holds ${written} entries, the manifest says ${manifest.kv.entries}`,
        );
      }
    } finally {
      kv.close();
    }
    return manifest;
  } catch (error) {
    if (kvCreated) {
      for (const suffix of KV_SIDECARS) await Deno.remove(target.kvPath + suffix).catch(() => {});
    }
    if (createdArtifactsDir) {
      await Deno.remove(target.artifactsDir, { recursive: true }).catch(() => {});
    } else {
      for (const path of placed) await Deno.remove(path).catch(() => {});
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

/** Refuses a data dir that already holds a KV database or any artifact. */
async function requireEmptyTarget(target: DataLocation): Promise<void> {
  for (const suffix of KV_SIDECARS) {
    if (await exists(target.kvPath + suffix)) {
      throw new BackupError(
        `${
          target.kvPath + suffix
        } exists: restore only into an empty data dir (stop the service, ` +
          `point APP_DATA_DIR at a new directory)`,
      );
    }
  }
  if (await exists(target.artifactsDir)) {
    for await (const entry of Deno.readDir(target.artifactsDir)) {
      throw new BackupError(
        `${target.artifactsDir} is not empty (${entry.name}): restore only into an empty data dir`,
      );
    }
  }
}

/** Copies one artifact in under a temporary name, verifies it, renames it into place. */
async function restoreArtifact(
  sourceDir: string,
  artifact: Manifest["artifacts"][number],
  artifactsDir: string,
): Promise<string> {
  if (!STORAGE_KEY_PATTERN.test(artifact.storage_key)) {
    throw new BackupError(
      `invalid storage key in the manifest: ${JSON.stringify(artifact.storage_key)}`,
    );
  }
  const from = join(sourceDir, ARTIFACTS_DIR, artifact.storage_key);
  const temp = join(artifactsDir, `.restore-${artifact.storage_key}.part`);
  const to = join(artifactsDir, artifact.storage_key);
  try {
    const copy = await copyFileHashed(from, temp);
    if (copy.sha256 !== artifact.sha256 || copy.size !== artifact.size_bytes) {
      throw new BackupError(
        `${from} is damaged: ${copy.size} bytes with SHA-256 ${copy.sha256}, ` +
          `expected ${artifact.size_bytes} bytes with SHA-256 ${artifact.sha256}`,
      );
    }
    await Deno.rename(temp, to);
    return to;
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    if (error instanceof Deno.errors.NotFound) throw new BackupError(`${from} is missing`);
    throw error;
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
