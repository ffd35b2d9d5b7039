/** The shared frame of the backup, restore and migrate commands: arguments, settings, exit codes. */
import { BackupError } from "../src/backup/format.ts";
import { type Config, ConfigError, loadConfig } from "../src/lib/config.ts";
import { StorageUnavailableError } from "../src/storage/mod.ts";
import { SnapshotUnstableError } from "../src/kv/entries.ts";

/** Only these settings are read (the tasks grant no other environment access). */
const SETTINGS = [
  "APP_DATA_DIR",
  "APP_KV_PATH",
  "APP_STORAGE",
  "APP_S3_ENDPOINT",
  "APP_S3_REGION",
  "APP_S3_BUCKET",
  "APP_S3_PREFIX",
  "APP_S3_ACCESS_KEY_ID",
  "APP_S3_SECRET_ACCESS_KEY",
  "APP_S3_FORCE_PATH_STYLE",
];

/** A refusal the operator can act on: printed as one line after "<task> failed:". */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolError";
  }
}

/** The settings of this process, with `overrides` (such as APP_STORAGE) on top. */
export function toolConfig(overrides: Record<string, string> = {}): Config {
  const env = Object.fromEntries(SETTINGS.map((setting) => [setting, Deno.env.get(setting)]));
  return loadConfig({ ...env, ...overrides });
}

/**
 * Runs a tool of one argument and, optionally, some of the boolean `flags`
 * (e.g. `--include-signing-keys`), which `run` receives as a set. An argument
 * that starts with "-" is given after `--`.
 */
export async function runTool(
  name: string,
  run: (arg: string, config: Config, flags: ReadonlySet<string>) => Promise<string>,
  { usage = "<dir>", flags = [] }: { usage?: string; flags?: readonly string[] } = {},
): Promise<never> {
  // After "--" every argument is the tool's own, one starting with "-" too (an account "-bob").
  const end = Deno.args.indexOf("--");
  const options = end === -1 ? Deno.args : Deno.args.slice(0, end);
  const given = options.filter((arg) => arg.startsWith("-"));
  const args = [
    ...options.filter((arg) => !arg.startsWith("-")),
    ...(end === -1 ? [] : Deno.args.slice(end + 1)),
  ];
  if (args.length !== 1 || given.some((flag) => !flags.includes(flag))) {
    const options = flags.map((flag) => `[${flag}] `).join("");
    console.error(`usage: deno task ${name} ${options}${usage}`);
    Deno.exit(2);
  }
  try {
    console.log(await run(args[0], toolConfig(), new Set(given)));
    Deno.exit(0);
  } catch (error) {
    if (
      error instanceof BackupError || error instanceof ConfigError || error instanceof ToolError ||
      error instanceof SnapshotUnstableError || error instanceof StorageUnavailableError
    ) {
      console.error(`${name} failed: ${error.message}`);
    } else if (error instanceof Deno.errors.NotCapable) {
      console.error(
        `${name} failed: ${error.message}\n(the task may read and write only under ./data; ` +
          `run deno run with wider --allow-read/--allow-write for other places)`,
      );
    } else {
      console.error(`${name} failed:`, error);
    }
    Deno.exit(1);
  }
}
