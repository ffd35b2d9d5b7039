/**
 * Where the offline tools (tools/sign_key_set.ts, tools/tuf_root.ts,
 * tools/tuf_export.ts) read and write: relative paths are taken from the
 * directory the operator ran the command in, never from the checkout.
 * `deno task` runs a tool in the checkout and passes the caller's directory
 * as INIT_CWD; run any other way (`deno run`), the process's own directory is
 * the caller's, and an INIT_CWD inherited from an outer `deno task` or
 * `npm run` is not taken.
 */
import { basename, dirname, join, relative, resolve } from "node:path";

/** The checkout this tools/ folder sits in. */
export const CHECKOUT: string = dirname(import.meta.dirname!);

/** The directory the operator ran the command in. */
export function callerDirectory(): string {
  const cwd = Deno.cwd();
  let caller: string | undefined;
  try {
    caller = Deno.env.get("INIT_CWD");
  } catch { /* not allowed to read it: run with `deno run` */ }
  return caller !== undefined && realPath(cwd) === realPath(CHECKOUT) ? caller : cwd;
}

/** `path` as an absolute path, a relative one taken from the caller's directory. */
export function callerPath(path: string): string {
  return resolve(callerDirectory(), path);
}

/**
 * The absolute path of `path` (see {@link callerPath}); throws when it lies
 * inside the checkout, where a private key is one `git add` from being
 * published (and a `git clean` from being lost). `option` names the flag.
 */
export function outsideCheckout(path: string, option: string): string {
  const absolute = callerPath(path);
  // The file may not exist yet: its folder's real path says where it lands.
  const landsAt = join(realPath(dirname(absolute)), basename(absolute));
  const inside = relative(realPath(CHECKOUT), landsAt);
  if (!inside.startsWith("..") && !inside.startsWith("/")) {
    throw new Error(
      `${option} ${absolute} is inside the checkout ${CHECKOUT}: a private key must not be ` +
        `written there; give a path outside it (a folder of its own on the offline machine)`,
    );
  }
  return absolute;
}

/** The real path of `path`, or `path` itself when it does not exist. */
function realPath(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return resolve(path);
  }
}
