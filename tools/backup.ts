/**
 * `deno task backup <dir>`: copies the data of APP_DATA_DIR (or APP_KV_PATH)
 * and its artifacts (the data dir, or the bucket with APP_STORAGE=s3) into the
 * new directory <dir>, while the service keeps running. With
 * `--include-signing-keys`, the private signing keys of the data dir too
 * (docs/signing.md "Keys and rotation"); without it, never. With
 * `--include-webhook-secrets`, the webhook endpoints' secrets; without it,
 * each endpoint is kept without its secret (docs/webhooks.md).
 */
import { createBackup } from "../src/backup/backup.ts";
import { openArtifactStore } from "../src/storage/mod.ts";
import { runTool } from "./run_tool.ts";

await runTool("backup", async (dir, config, flags) => {
  const manifest = await createBackup(
    { ...config, artifacts: await openArtifactStore(config) },
    dir,
    {
      includeSigningKeys: flags.has("--include-signing-keys"),
      includeWebhookSecrets: flags.has("--include-webhook-secrets"),
    },
  );
  const { projects, releases, api_keys } = manifest.counts;
  const bytes = manifest.artifacts.reduce((sum, artifact) => sum + artifact.size_bytes, 0);
  return `backup written to ${dir}: ${manifest.kv.entries} KV entries ` +
    `(${projects} projects, ${releases} releases, ${api_keys} API keys), ` +
    `${manifest.artifacts.length} artifacts (${bytes} bytes), all SHA-256 verified` +
    (manifest.signing_keys
      ? `, ${manifest.signing_keys.length} private signing keys (keep this backup secret)`
      : "") +
    (manifest.webhook_secrets === "included"
      ? ", the webhook secrets (keep this backup secret)"
      : ", no webhook secrets");
}, { flags: ["--include-signing-keys", "--include-webhook-secrets"] });
