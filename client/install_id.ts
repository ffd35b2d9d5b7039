/**
 * The install id (docs/rollouts.md "Who gets the release"): a random id made once per
 * install and kept in the client's state directory as the file `install-id`,
 * sent as `X-Install-Id` on every request so that a staged rollout and the
 * adoption counts tell installs sharing one key apart.
 */
import { join } from "node:path";
import { UpdateClientError } from "./http.ts";

/** The file in the state directory that holds the id. */
export const INSTALL_ID_FILE = "install-id";

/** What the service accepts: 1–128 printable ASCII characters. */
const USABLE_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The install id kept in `stateDir`, made (a random UUID) and saved on the
 * first call. Two first calls at once agree: the id is written to a file of
 * its own and linked into place, so exactly one wins and the other reads it.
 * A file holding no usable id is replaced. Fails with kind `file` when the
 * directory cannot be read or written.
 */
export async function loadInstallId(stateDir: string): Promise<string> {
  const path = join(stateDir, INSTALL_ID_FILE);
  const kept = await readId(path);
  if (kept !== null && USABLE_ID.test(kept)) return kept;
  const id = crypto.randomUUID();
  const draft = `${path}.${id}.new`;
  try {
    await Deno.mkdir(stateDir, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(draft, `${id}\n`, { mode: 0o600 });
    if (kept === null) {
      try {
        await Deno.link(draft, path);
        return id;
      } catch (error) {
        // Another run made it first; any other failure (no hard links here): renamed below.
        if (error instanceof Deno.errors.AlreadyExists) {
          const won = await readId(path);
          if (won !== null && USABLE_ID.test(won)) return won;
        }
      }
    }
    await Deno.rename(draft, path);
    return id;
  } catch (error) {
    throw new UpdateClientError(
      "file",
      `cannot keep the install id in ${path}: ${(error as Error).message}`,
    );
  } finally {
    await Deno.remove(draft).catch(() => {});
  }
}

/** The id in `path` (trimmed), or null when there is no such file. */
async function readId(path: string): Promise<string | null> {
  try {
    return (await Deno.readTextFile(path)).trim();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw new UpdateClientError(
      "file",
      `cannot read the install id in ${path}: ${(error as Error).message}`,
    );
  }
}

/**
 * Where the CLI keeps its state when neither `--state-dir` nor
 * `UPDATE_STATE_DIR` says: `$XDG_STATE_HOME/uds-client`, else
 * `~/.local/state/uds-client` (`%LOCALAPPDATA%\uds-client` on Windows);
 * undefined when none of these variables is set or may be read.
 */
export function defaultStateDirectory(): string | undefined {
  if (Deno.build.os === "windows") {
    const local = readEnv("LOCALAPPDATA");
    return local === undefined ? undefined : join(local, "uds-client");
  }
  const state = readEnv("XDG_STATE_HOME");
  if (state !== undefined) return join(state, "uds-client");
  const home = readEnv("HOME");
  return home === undefined ? undefined : join(home, ".local", "state", "uds-client");
}

/**
 * An environment variable, or undefined when it is unset, empty or not
 * granted (never a permission prompt: an install made with fewer
 * `--allow-env` names runs as if they were unset).
 */
export function readEnv(name: string): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") {
    return undefined;
  }
  return Deno.env.get(name) || undefined;
}
