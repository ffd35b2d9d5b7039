/**
 * Prints, comma-separated, the paths the service may read and write: the data
 * dir and, when APP_KV_PATH is a file elsewhere, its directory. `deno task
 * start` passes them to --allow-read and --allow-write, so the server gets
 * exactly the data dir the operator chose (least privilege) and nothing more.
 * With invalid settings it prints ./data: main.ts then names the setting.
 */
import { dirname, relative } from "node:path";
import { isRemoteKv, loadConfig } from "../src/lib/config.ts";

function dataPaths(): string[] {
  try {
    const config = loadConfig();
    const paths = [config.dataDir];
    const isFile = config.kvPath !== ":memory:" && !isRemoteKv(config.kvPath);
    if (isFile && relative(config.dataDir, config.kvPath).startsWith("..")) {
      paths.push(dirname(config.kvPath));
    }
    return paths;
  } catch {
    return ["./data"];
  }
}

console.log(dataPaths().join(","));
