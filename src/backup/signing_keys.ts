/**
 * The signing keys' private files (docs/signing.md "Keys and rotation") in a
 * backup, only when asked (`deno task backup --include-signing-keys`):
 * `<backup>/signing-keys/<kid>.pem`, 0600 in a 0700 directory, each listed in
 * the manifest with its SHA-256; a restore puts them back into the data dir's
 * `signing-keys/`, 0600 again, after checking each hash.
 */
import { sha256Hex } from "../lib/secrets.ts";
import { join } from "node:path";
import { createPrivateFile, makePrivateDir } from "../lib/private_files.ts";
import { pathExists } from "../lib/files.ts";
import { SIGNING_KEYS_DIR } from "../signing/key_files.ts";
import { BackupError, type ManifestSigningKey } from "./format.ts";

const KEY_FILE = /^(k[0-9a-f]{16})\.pem$/;

/** Copies every key file of `dataDir` into `targetDir`; none when the data dir has none. */
export async function backupSigningKeys(
  dataDir: string,
  targetDir: string,
): Promise<ManifestSigningKey[]> {
  const from = join(dataDir, SIGNING_KEYS_DIR);
  if (!(await pathExists(from))) return [];
  const copied: ManifestSigningKey[] = [];
  await makePrivateDir(join(targetDir, SIGNING_KEYS_DIR));
  for await (const entry of Deno.readDir(from)) {
    const kid = KEY_FILE.exec(entry.name)?.[1];
    if (!entry.isFile || kid === undefined) continue;
    const bytes = await Deno.readFile(join(from, entry.name));
    await writePrivate(join(targetDir, SIGNING_KEYS_DIR, entry.name), bytes);
    copied.push({ kid, sha256: sha256Hex(bytes) });
  }
  return copied.sort((a, b) => a.kid.localeCompare(b.kid));
}

/** Refuses a data dir that already holds a key file the backup would put back. */
export async function requireNoSigningKeys(
  keys: readonly ManifestSigningKey[],
  dataDir: string,
): Promise<void> {
  for (const { kid } of keys) {
    const path = join(dataDir, SIGNING_KEYS_DIR, `${kid}.pem`);
    if (await pathExists(path)) {
      throw new BackupError(`${path} exists: restore only into an empty data dir`);
    }
  }
}

/**
 * Puts the key files of the backup in `sourceDir` into `dataDir`, each checked
 * against the manifest; returns the files written (a failed restore removes them).
 */
export async function restoreSigningKeys(
  sourceDir: string,
  { keys, dataDir, written }: {
    keys: readonly ManifestSigningKey[];
    dataDir: string;
    written: string[];
  },
): Promise<void> {
  if (keys.length === 0) return;
  await makePrivateDir(join(dataDir, SIGNING_KEYS_DIR));
  for (const { kid, sha256 } of keys) {
    if (!/^k[0-9a-f]{16}$/.test(kid)) {
      throw new BackupError(`invalid signing key id in the manifest: ${JSON.stringify(kid)}`);
    }
    const from = join(sourceDir, SIGNING_KEYS_DIR, `${kid}.pem`);
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(from);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) throw new BackupError(`${from} is missing`);
      throw error;
    }
    if (sha256Hex(bytes) !== sha256) {
      throw new BackupError(
        `${from} does not match its SHA-256 in the manifest: the backup is damaged`,
      );
    }
    const to = join(dataDir, SIGNING_KEYS_DIR, `${kid}.pem`);
    await writePrivate(to, bytes);
    written.push(to);
  }
}

async function writePrivate(path: string, bytes: Uint8Array): Promise<void> {
  const file = await createPrivateFile(path);
  try {
    for (let done = 0; done < bytes.byteLength;) done += await file.write(bytes.subarray(done));
    await file.sync();
  } finally {
    file.close();
  }
}
