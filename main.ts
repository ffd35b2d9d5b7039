/** The single entry point: read settings, open storage, serve. */
import { bootstrapAdmin } from "./admin/mod.ts";
import { createApp } from "./src/app.ts";
import { ConfigError, loadConfig } from "./src/config.ts";
import { createKeyUsageRecorder } from "./src/key_usage.ts";

function readConfig() {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`cannot start: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
}

const config = readConfig();
await Deno.mkdir(config.artifactsDir, { recursive: true });
const kv = await Deno.openKv(config.kvPath);
await bootstrapAdmin(kv, config);
const rateLimitKv = config.rateLimitStore === "kv" ? kv : await Deno.openKv(":memory:");

const app = createApp({ config, kv, rateLimitKv, recordKeyUse: createKeyUsageRecorder(kv) });

const server = Deno.serve({
  port: config.port,
  hostname: config.host,
  onListen: ({ hostname, port }) => {
    console.log(
      `${config.serviceName} listening on http://${hostname}:${port} (data in ${config.dataDir})`,
    );
  },
}, app.fetch);

// Stop cleanly on SIGINT/SIGTERM (also as PID 1 in a container, which has no default handler).
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  if (Deno.build.os === "windows" && signal === "SIGTERM") continue;
  Deno.addSignalListener(signal, () => {
    server.shutdown().finally(() => {
      kv.close();
      Deno.exit(0);
    });
  });
}
