/**
 * What `deno task tuf-export` runs: tools/tuf_export.ts in a Deno process of
 * its own that may write in the output folder (--out) and nowhere else. A
 * task's permissions are written before its arguments are known, so this
 * launcher reads --out and starts `deno run --allow-write=<out>` (the `deno`
 * on PATH) with the same arguments; it reads, connects and writes nothing
 * itself. Its exit code is the export's.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { callerPath } from "./caller_paths.ts";

/** The output folder the arguments name, absolute; undefined when they name none. */
function outOf(args: string[]): string | undefined {
  const { values } = parseArgs({ args, strict: false, options: { out: { type: "string" } } });
  return typeof values.out === "string" && values.out !== "" ? callerPath(values.out) : undefined;
}

/** The arguments of the `deno` that runs the export: it may write in `--out` only. */
export function exportCommand(args: string[]): string[] {
  const out = outOf(args);
  // Deno's permission lists are comma-separated: such a folder could not be given alone.
  if (out?.includes(",")) {
    throw new Error(`--out ${out}: a folder whose path has a comma cannot be allowed on its own`);
  }
  return [
    "run",
    "--no-prompt",
    "--allow-net",
    "--allow-env=UPDATE_API_KEY,INIT_CWD,__MINIMATCH_TESTING_PLATFORM__",
    "--allow-read",
    // Without --out the export stops at its usage, before writing.
    ...(out === undefined ? [] : [`--allow-write=${out}`]),
    join(import.meta.dirname!, "tuf_export.ts"),
    ...args,
  ];
}

async function main(): Promise<number> {
  let args: string[];
  try {
    args = exportCommand(Deno.args);
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  const child = new Deno.Command("deno", {
    args,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  });
  return (await child.output()).code;
}

if (import.meta.main) Deno.exit(await main());
