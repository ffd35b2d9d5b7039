/**
 * The private key files of the data dir in a backup, only when asked
 * (`deno task backup --include-signing-keys`): the signing keys
 * (docs/signing.md "Keys and rotation") as `<backup>/signing-keys/<kid>.pem`
 * and the projects' Sparkle keys (docs/feeds.md "Signed Sparkle feeds") as
 * `<backup>/sparkle-keys/<project id>.pem`, 0600 in 0700 directories, each
 * listed in the manifest with its SHA-256; a restore puts them back into the
 * data dir, 0600 again, after checking each hash.
 */
import { sha256Hex } from "../lib/secrets.ts";
import { join } from "node:path";
import { createPrivateFile, makePrivateDir } from "../lib/private_files.ts";
import { pathExists } from "../lib/files.ts";
import { SIGNING_KEYS_DIR } from "../signing/key_files.ts";
import { SPARKLE_KEYS_DIR } from "../feeds/sparkle_signing.ts";
import { BackupError, type ManifestSigningKey, type ManifestSparkleKey } from "./format.ts";

/** One kind of key file: its folder (in the data dir and the backup) and its names. */
interface KeyFileKind {
  dir: string;
  /** The file name's id part (kid, project id); a name that does not match is not a key file. */
  name: RegExp;
}

const SIGNING: KeyFileKind = { dir: SIGNING_KEYS_DIR, name: /^(k[0-9a-f]{16})\.pem$/ };
const SPARKLE: KeyFileKind = { dir: SPARKLE_KEYS_DIR, name: /^([1-9][0-9]{0,15})\.pem$/ };

/** The key files of `dataDir`, as the manifest lists them. */
export interface KeyFiles {
  signing_keys: ManifestSigningKey[];
  sparkle_keys: ManifestSparkleKey[];
}

/** Copies every key file of `dataDir` into `targetDir`; none when the data dir has none. */
export async function backupSigningKeys(dataDir: string, targetDir: string): Promise<KeyFiles> {
  const signing = await copyKind(SIGNING, dataDir, targetDir);
  const sparkle = await copyKind(SPARKLE, dataDir, targetDir);
  return {
    signing_keys: signing.map(({ id, sha256 }) => ({ kid: id, sha256 })),
    sparkle_keys: sparkle.map(({ id, sha256 }) => ({ project_id: Number(id), sha256 }))
      .sort((a, b) => a.project_id - b.project_id),
  };
}

/** How many key files of each kind `dataDir` holds (what a backup without the flag leaves out). */
export async function countKeyFiles(
  dataDir: string,
): Promise<{ signing: number; sparkle: number }> {
  const count = async ({ dir, name }: KeyFileKind) => {
    const from = join(dataDir, dir);
    if (!(await pathExists(from))) return 0;
    let n = 0;
    for await (const entry of Deno.readDir(from)) if (entry.isFile && name.test(entry.name)) n++;
    return n;
  };
  return { signing: await count(SIGNING), sparkle: await count(SPARKLE) };
}

async function copyKind(
  { dir, name }: KeyFileKind,
  dataDir: string,
  targetDir: string,
): Promise<Array<{ id: string; sha256: string }>> {
  const from = join(dataDir, dir);
  if (!(await pathExists(from))) return [];
  const copied: Array<{ id: string; sha256: string }> = [];
  await makePrivateDir(join(targetDir, dir));
  for await (const entry of Deno.readDir(from)) {
    const id = name.exec(entry.name)?.[1];
    if (!entry.isFile || id === undefined) continue;
    const bytes = await Deno.readFile(join(from, entry.name));
    await writePrivate(join(targetDir, dir, entry.name), bytes);
    copied.push({ id, sha256: sha256Hex(bytes) });
  }
  return copied.sort((a, b) => a.id.localeCompare(b.id));
}

/** The files of the manifest's lists: kind, file name, SHA-256. */
function listed(
  { signing_keys = [], sparkle_keys = [] }: Partial<KeyFiles>,
): Array<{ kind: KeyFileKind; file: string; sha256: string }> {
  return [
    ...signing_keys.map(({ kid, sha256 }) => ({ kind: SIGNING, file: `${kid}.pem`, sha256 })),
    ...sparkle_keys.map(({ project_id, sha256 }) => ({
      kind: SPARKLE,
      file: `${project_id}.pem`,
      sha256,
    })),
  ];
}

/** Refuses a data dir that already holds a key file the backup would put back. */
export async function requireNoSigningKeys(
  keys: Partial<KeyFiles>,
  dataDir: string,
): Promise<void> {
  for (const { kind, file } of listed(keys)) {
    const path = join(dataDir, kind.dir, file);
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
    keys: Partial<KeyFiles>;
    dataDir: string;
    written: string[];
  },
): Promise<void> {
  for (const { kind, file, sha256 } of listed(keys)) {
    if (!kind.name.test(file)) {
      throw new BackupError(
        `invalid ${kind.dir} file name in the manifest: ${JSON.stringify(file)}`,
      );
    }
    const from = join(sourceDir, kind.dir, file);
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
    await makePrivateDir(join(dataDir, kind.dir));
    const to = join(dataDir, kind.dir, file);
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
