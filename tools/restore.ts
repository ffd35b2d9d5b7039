/**
 * `deno task restore <dir>`: rebuilds the empty data dir APP_DATA_DIR (or
 * APP_KV_PATH), and its artifacts (the data dir, or the empty bucket with
 * APP_STORAGE=s3), from the backup in <dir>. What the restored data lacks (a
 * private key file the backup left out, a webhook secret) is said on stderr,
 * each with how to bring it back.
 */
import { restoreBackup } from "../src/backup/restore.ts";
import { describeMissingKeyFiles, noticeLine } from "../src/signing/key_file_check.ts";
import { openArtifactStore } from "../src/storage/mod.ts";
import { runTool } from "./run_tool.ts";

await runTool("restore", async (dir, config) => {
  const manifest = await restoreBackup(dir, {
    ...config,
    artifacts: await openArtifactStore(config),
  });
  const keyFiles = (manifest.signing_keys?.length ?? 0) + (manifest.sparkle_keys?.length ?? 0);
  const missing = manifest.missingKeyFiles === null
    ? []
    : describeMissingKeyFiles(manifest.missingKeyFiles).map(noticeLine);
  for (const line of missing) console.error(`restore: WARNING: ${line}`);
  return `restored ${manifest.kv.entries} KV entries and ${manifest.artifacts.length} artifacts` +
    (keyFiles > 0 ? ` and ${keyFiles} private key files` : "") +
    ` from ${dir} (backup of ${manifest.created_at}) into ${config.dataDir}` +
    (manifest.endpointsWithoutSecret > 0
      ? `; ${manifest.endpointsWithoutSecret} webhook endpoints have no secret (the backup ` +
        `left them out): give each a new secret on its admin page; their deliveries are ` +
        `retried until then`
      : "") +
    (missing.length > 0
      ? `; ${missing.length} private key files are missing (above): until they are back, ` +
        `the restored service does not sign what they sign`
      : "");
});
