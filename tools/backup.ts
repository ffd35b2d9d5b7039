/**
 * `deno task backup <dir>`: copies the data of APP_DATA_DIR (or APP_KV_PATH)
 * and its artifacts (the data dir, or the bucket with APP_STORAGE=s3) into the
 * new directory <dir>, while the service keeps running. With
 * `--include-signing-keys`, the private key files of the data dir too (the
 * signing keys, docs/signing.md "Keys and rotation", and the Sparkle keys);
 * without it, never, and a warning says how many were left out. With
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
  const { signing, sparkle } = manifest.keyFilesLeftOut;
  if (signing + sparkle > 0) {
    console.error(
      `backup: WARNING: left out ${signing} private signing key files and ${sparkle} Sparkle ` +
        `key files of ${config.dataDir}: a service restored from this backup does not sign ` +
        `with them (answers and appcasts go out unsigned, TUF metadata is not signed again) ` +
        `until they are copied back. Back up with --include-signing-keys (and keep the ` +
        `backup secret), or keep a copy of signing-keys/ and sparkle-keys/ apart ` +
        `(docs/operators.md "For operators: backup and restore").`,
    );
  }
  const { projects, releases, api_keys } = manifest.counts;
  const bytes = manifest.artifacts.reduce((sum, artifact) => sum + artifact.size_bytes, 0);
  return `backup written to ${dir}: ${manifest.kv.entries} KV entries ` +
    `(${projects} projects, ${releases} releases, ${api_keys} API keys), ` +
    `${manifest.artifacts.length} artifacts (${bytes} bytes), all SHA-256 verified` +
    (manifest.signing_keys
      ? `, ${manifest.signing_keys.length} private signing keys and ` +
        `${manifest.sparkle_keys?.length ?? 0} Sparkle keys (keep this backup secret)`
      : "") +
    (manifest.webhook_secrets === "included"
      ? ", the webhook secrets (keep this backup secret)"
      : ", no webhook secrets");
}, { flags: ["--include-signing-keys", "--include-webhook-secrets"] });
