/** The shared frame of the backup and restore commands: arguments, settings, exit codes. */
import { BackupError } from "../src/backup/format.ts";
import { type Config, ConfigError, loadConfig } from "../src/lib/config.ts";
import { SnapshotUnstableError } from "../src/store/mod.ts";

/** Only these settings are read (the tasks grant no other environment access). */
const SETTINGS = ["APP_DATA_DIR", "APP_KV_PATH"];

export async function runTool(
  name: "backup" | "restore",
  run: (dir: string, config: Config) => Promise<string>,
): Promise<never> {
  if (Deno.args.length !== 1 || Deno.args[0].startsWith("-")) {
    console.error(`usage: deno task ${name} <dir>`);
    Deno.exit(2);
  }
  try {
    const env = Object.fromEntries(SETTINGS.map((setting) => [setting, Deno.env.get(setting)]));
    console.log(await run(Deno.args[0], loadConfig(env)));
    Deno.exit(0);
  } catch (error) {
    if (
      error instanceof BackupError || error instanceof ConfigError ||
      error instanceof SnapshotUnstableError
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
