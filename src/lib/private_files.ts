/**
 * Files only the service's user may read: the KV (password hashes, sessions,
 * audit log), artifacts and backups are created 0600 and their directories
 * 0700, whatever the umask. The mode is set again after creation, because a
 * umask can only take bits away from the mode asked for, never add them.
 */
import { isRemoteKv } from "./config.ts";

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** Creates `path` (and missing parents) as a 0700 directory; an existing one is left as it is. */
export async function makePrivateDir(path: string): Promise<void> {
  const created = await missingAncestors(path);
  await Deno.mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  for (const dir of created) await chmodIfSupported(dir, PRIVATE_DIR_MODE);
}

/** The directories from `path` upwards that do not exist yet. */
async function missingAncestors(path: string): Promise<string[]> {
  const missing: string[] = [];
  let current = path.replace(/\/+$/, "") || "/";
  for (;;) {
    try {
      await Deno.lstat(current);
      return missing;
    } catch (error) {
      // Outside what this process may read: not ours to create or change.
      if (error instanceof Deno.errors.NotCapable) return missing;
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    missing.push(current);
    const parent = current.replace(/\/[^/]*$/, "");
    if (parent === current || parent === "" || parent === ".") return missing;
    current = parent;
  }
}

/** Opens a new file (it must not exist yet) for writing, with mode 0600. */
export async function createPrivateFile(path: string): Promise<Deno.FsFile> {
  const file = await Deno.open(path, { write: true, createNew: true, mode: PRIVATE_FILE_MODE });
  try {
    await chmodIfSupported(path, PRIVATE_FILE_MODE);
  } catch (error) {
    file.close();
    throw error;
  }
  return file;
}

/** A KV database file and the files SQLite keeps beside it: the suffixes of their names. */
export const KV_FILE_SUFFIXES = ["", "-wal", "-shm", "-journal"];

/**
 * Opens the KV at `path` with its files private: a missing database file is
 * created 0600 first (SQLite gives its -wal and -shm files the database's
 * mode), and every file of it is set to 0600 after opening. KV Connect URLs
 * and `:memory:` are opened as they are.
 */
export async function openPrivateKv(path: string): Promise<Deno.Kv> {
  if (path === ":memory:" || isRemoteKv(path)) return await Deno.openKv(path);
  try {
    (await createPrivateFile(path)).close();
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
  }
  const kv = await openWhileLocked(path);
  try {
    await restrictKvFiles(path);
  } catch (error) {
    kv.close();
    throw error;
  }
  return kv;
}

/**
 * Opens the KV file at `path`, again while another process starting on the same file holds its
 * lock ("database is locked", e.g. the workers of `deno task start:all-cores` starting at once).
 */
async function openWhileLocked(path: string): Promise<Deno.Kv> {
  for (let attempt = 1;; attempt++) {
    try {
      return await Deno.openKv(path);
    } catch (error) {
      const locked = error instanceof Error && /database is locked/i.test(error.message);
      if (!locked || attempt >= 50) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
  }
}

/** Sets every existing file of the KV at `path` to 0600. */
export async function restrictKvFiles(path: string): Promise<void> {
  for (const suffix of KV_FILE_SUFFIXES) {
    try {
      await chmodIfSupported(path + suffix, PRIVATE_FILE_MODE);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}

/** The file the repository ships in `./data` so that the directory exists in a checkout. */
export const KEEP_FILE = ".keep";

/**
 * Makes `dir` 0700 when others may read or enter it but it holds nothing but
 * the repository's keep file (a fresh checkout's `./data`, mode 755). True
 * when its mode was changed. Any other directory, an empty one included (an
 * operator may have made it so on purpose), is left as it is: the service
 * warns instead.
 */
export async function makeFreshDirPrivate(dir: string): Promise<boolean> {
  if (Deno.build.os === "windows") return false;
  const { mode } = await Deno.stat(dir);
  if (mode === null || (mode & 0o077) === 0) return false;
  let keepFile = false;
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name !== KEEP_FILE || !entry.isFile) return false;
    keepFile = true;
  }
  if (!keepFile) return false;
  await Deno.chmod(dir, PRIVATE_DIR_MODE);
  return true;
}

/**
 * A warning when other users may read or enter `dir` (mode bits for group or
 * others), or null. PostgreSQL refuses to start in that case; we warn.
 */
export async function openToOthersWarning(dir: string): Promise<string | null> {
  if (Deno.build.os === "windows") return null;
  const { mode } = await Deno.stat(dir);
  if (mode === null || (mode & 0o077) === 0) return null;
  const octal = (mode & 0o777).toString(8).padStart(3, "0");
  return `the data directory ${dir} can be read by other users (mode ${octal}); ` +
    `it holds password hashes, sessions and artifacts: run chmod 700 ${dir}`;
}

async function chmodIfSupported(path: string, mode: number): Promise<void> {
  if (Deno.build.os === "windows") return;
  await Deno.chmod(path, mode);
}
