/**
 * `deno task migrate-artifacts fs-to-s3|s3-to-fs`: copies every release's
 * artifact between the data dir (APP_DATA_DIR) and the bucket (APP_S3_*),
 * checked against its SHA-256; see src/backup/migrate.ts for when to run it.
 */
import { migrateArtifacts } from "../src/backup/migrate.ts";
import { BackupError } from "../src/backup/format.ts";
import { requireDatabase } from "../src/backup/backup.ts";
import { openArtifactStore } from "../src/storage/mod.ts";
import { runTool, toolConfig } from "./run_tool.ts";
import { createStore } from "../src/kv/store.ts";

await runTool("migrate-artifacts", async (direction) => {
  if (direction !== "fs-to-s3" && direction !== "s3-to-fs") {
    throw new BackupError(`expected fs-to-s3 or s3-to-fs, got "${direction}"`);
  }
  const fs = await openArtifactStore(toolConfig({ APP_STORAGE: "fs" }));
  const s3Config = toolConfig({ APP_STORAGE: "s3" });
  const s3 = await openArtifactStore(s3Config);
  const [from, to] = direction === "fs-to-s3" ? [fs, s3] : [s3, fs];
  await requireDatabase(s3Config.kvPath);
  const kv = await Deno.openKv(s3Config.kvPath);
  const store = createStore(kv);
  try {
    const result = await migrateArtifacts(store, {
      from,
      to,
      progress: (line) => console.log(line),
    });
    return `${direction}: ${result.copied} artifacts copied (${result.copiedBytes} bytes), ` +
      `${result.present} already there, every one SHA-256 verified; ` +
      `now set APP_STORAGE=${direction === "fs-to-s3" ? "s3" : "fs"} and restart`;
  } finally {
    kv.close();
  }
}, { usage: "fs-to-s3|s3-to-fs" });
