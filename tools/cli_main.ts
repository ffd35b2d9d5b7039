/**
 * The frame of the offline tools that take a command and options
 * (tools/sign_key_set.ts, tools/tuf_root.ts, tools/tuf_export.ts): the
 * message of a failure, with the usage when the call was wrong; exit 2 for
 * a wrong call, 1 for anything else, 0 when done.
 */

/** A wrong call: the tool prints its usage and exits 2. */
export class UsageError extends Error {}

/** Prints what `run` returns, or its failure; then exits with the tool's code. */
export async function runCliMain(run: () => Promise<string>, usage: string): Promise<void> {
  try {
    console.log(await run());
  } catch (error) {
    const wrongCall = error instanceof UsageError ||
      (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    console.error(`${(error as Error).message}${wrongCall ? `\n${usage}` : ""}`);
    Deno.exit(wrongCall ? 2 : 1);
  }
}
