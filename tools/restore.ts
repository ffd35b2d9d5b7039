/**
 * `deno task restore <dir>`: rebuilds the empty data dir APP_DATA_DIR (or
 * APP_KV_PATH), and its artifacts (the data dir, or the empty bucket with
 * APP_STORAGE=s3), from the backup in <dir>.
 */
import { restoreBackup } from "../src/backup/restore.ts";
import { openArtifactStore } from "../src/storage/mod.ts";
import { runTool } from "./run_tool.ts";

await runTool("restore", async (dir, config) => {
  const manifest = await restoreBackup(dir, {
    ...config,
    artifacts: await openArtifactStore(config),
  });
  return `restored ${manifest.kv.entries} KV entries and ${manifest.artifacts.length} artifacts ` +
    (manifest.signing_keys?.length
      ? ` and ${manifest.signing_keys.length} private signing keys`
      : "") +
    ` from ${dir} (backup of ${manifest.created_at}) into ${config.dataDir}` +
    (manifest.endpointsWithoutSecret > 0
      ? `; ${manifest.endpointsWithoutSecret} webhook endpoints have no secret (the backup ` +
        `left them out): give each a new secret on its admin page; their deliveries are ` +
        `retried until then`
      : "");
});
