/**
 * Start-up failures an operator can fix, as one line that names the setting
 * and the fix (main.ts prints it and exits 1, without a stack trace).
 */
import { dirname } from "node:path";
import type { Config, ListenAddress } from "./config.ts";

/** A start-up step that failed: what was being done, and for which setting. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartupError";
  }
}

/** The path a data-dir step works on, and what it does there (e.g. "create"). */
export interface DataDirTarget {
  path: string;
  what: string;
}

/** Runs a data-dir step (`what` is e.g. "create"), turning file-system refusals into one line. */
export async function dataDirStep<T>(
  config: Config,
  { path, what }: DataDirTarget,
  step: () => Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    const setting = path.startsWith(config.dataDir) ? "APP_DATA_DIR" : "APP_KV_PATH";
    if (error instanceof Deno.errors.NotCapable) {
      throw new StartupError(
        `${setting}: this process may not ${what} ${path}; start the service with ` +
          "`deno task start`, which allows exactly the paths of APP_DATA_DIR and APP_KV_PATH",
      );
    }
    const uid = processUid();
    const user = uid === null ? "this user" : `uid ${uid}, the user this service runs as`;
    const owner = uid ?? '"$(id -un)"';
    // The KV's SQLite file: it needs the file and, for its -wal and -shm files, its directory.
    if (what === "open" && (error instanceof Deno.errors.PermissionDenied || isUnopenable(error))) {
      if (isDirectory(path)) {
        throw new StartupError(`${setting}: ${path} is a directory; give the path of a file`);
      }
      const dir = dirname(path);
      throw new StartupError(
        `${setting}: cannot open ${path} for writing (a read-only file, directory or file ` +
          `system); SQLite also writes ${path}-wal and ${path}-shm beside it: make the file and ` +
          `${dir} writable for ${user}, e.g. sudo chown ${owner} ${dir} ${path}*`,
      );
    }
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new StartupError(
        `${setting}: cannot ${what} ${path} (permission denied); create it for ${user}, ` +
          `e.g. sudo install -d -m 700 -o ${owner} ${path}`,
      );
    }
    if ((error as { code?: string }).code === "EROFS") {
      throw new StartupError(
        `${setting}: cannot ${what} ${path} (read-only file system); mount a writable volume ` +
          "there (in a container: -v uds-data:/app/data)",
      );
    }
    if (error instanceof Deno.errors.NotADirectory || error instanceof Deno.errors.AlreadyExists) {
      throw new StartupError(`${setting}: ${path} is not a directory; point ${setting} elsewhere`);
    }
    if (error instanceof Deno.errors.IsADirectory) {
      throw new StartupError(`${setting}: ${path} is a directory; give the path of a file`);
    }
    throw error;
  }
}

function isDirectory(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

/** SQLite's answer when it cannot open a database file for writing at all. */
function isUnopenable(error: unknown): boolean {
  return error instanceof Error &&
    /unable to open database file|readonly database/i.test(error.message);
}

/** This process's uid, when it may ask (the container runs with --allow-sys=uid); else null. */
function processUid(): number | null {
  if (Deno.permissions.querySync({ name: "sys", kind: "uid" }).state !== "granted") return null;
  return Deno.uid();
}

/** Runs `Deno.serve` for `setting`, turning a busy or forbidden address into one line. */
export function listenStep<T>(
  setting: string,
  address: ListenAddress,
  listen: () => T,
): T {
  try {
    return listen();
  } catch (error) {
    const where = `${address.hostname}:${address.port}`;
    if (error instanceof Deno.errors.AddrInUse) {
      throw new StartupError(
        `${setting}: ${where} is already in use; stop the other process or choose another port`,
      );
    }
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new StartupError(
        `${setting}: not allowed to listen on ${where}; ports below 1024 need privileges, ` +
          "use a higher port behind a reverse proxy",
      );
    }
    if (error instanceof Deno.errors.AddrNotAvailable) {
      throw new StartupError(
        `${setting}: ${address.hostname} is not an address of this host; use 0.0.0.0 or one of its addresses`,
      );
    }
    throw error;
  }
}
