/** The single entry point: read settings, open storage, serve, stop gracefully. */
import { bootstrapAdmin } from "./admin/mod.ts";
import { createApp } from "./app.ts";
import { BENCH_LAYERS, type BenchLayer } from "./src/http/app_env.ts";
import { ConfigError, loadConfig } from "./src/lib/config.ts";
import { createMetricsApp, metricsAddressLabel } from "./src/http/metrics_route.ts";
import { createKeyUsageRecorder } from "./src/store/key_usage.ts";
import { createBufferedWriter, createLogger } from "./src/lib/log.ts";
import { inFlightRequests } from "./src/lib/metrics.ts";
import { drainServers, onStopSignals } from "./src/lib/shutdown.ts";
import { followOtherWriters } from "./src/store/mod.ts";
import { openArtifactStore, scheduleSweeps, StorageUnavailableError } from "./src/storage/mod.ts";

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

/** APP_BENCH_OFF: a layer `deno task bench` switches off to measure it (never set it yourself). */
function benchLayerOff(): BenchLayer | undefined {
  const name = Deno.env.get("APP_BENCH_OFF");
  if (!name) return undefined;
  if (!Object.hasOwn(BENCH_LAYERS, name)) {
    console.error(`cannot start: APP_BENCH_OFF must be one of ${Object.keys(BENCH_LAYERS)}`);
    Deno.exit(1);
  }
  console.error(`APP_BENCH_OFF=${name}: for measuring only, a rule of the service is off`);
  return name as BenchLayer;
}

const config = readConfig();
const stdout = createBufferedWriter();
const logger = createLogger(config.logFormat, stdout);
const artifacts = await openArtifactStore(config).catch((error) => {
  if (!(error instanceof StorageUnavailableError)) throw error;
  console.error(`cannot start: APP_STORAGE=s3: ${error.message}`);
  Deno.exit(1);
});
const kv = await Deno.openKv(config.kvPath);
await bootstrapAdmin(kv, config, (message) => logger.event("warn", message));
const stopFollowingWriters = followOtherWriters(kv, config.cacheRefreshMs);
if (artifacts.kind === "s3") {
  scheduleSweeps(kv, artifacts, (result) => {
    if ("error" in result) {
      logger.event("warn", `storage sweep failed: ${String(result.error)}`);
    } else if (result.abortedUploads > 0 || result.removedObjects > 0) {
      logger.event("info", "storage sweep removed what an interrupted upload left", {
        aborted_uploads: result.abortedUploads,
        removed_objects: result.removedObjects,
      });
    }
  });
}

const benchOff = benchLayerOff();
const app = createApp({
  config,
  kv,
  artifacts,
  rateLimitKv: config.rateLimitStore === "kv" ? kv : undefined,
  recordKeyUse: createKeyUsageRecorder(kv),
  logger: benchOff === "access_log" ? undefined : logger,
  benchOff,
});

const servers: Deno.HttpServer[] = [];
servers.push(Deno.serve({
  port: config.port,
  hostname: config.host,
  reusePort: config.reusePort,
  onListen: ({ hostname, port }) => {
    logger.event(
      "info",
      `${config.serviceName} listening on http://${hostname}:${port} (data in ${config.dataDir})`,
      { metrics: metricsAddressLabel(config) },
    );
  },
}, app.fetch));

if (config.metricsAddress !== undefined) {
  servers.push(Deno.serve({
    ...config.metricsAddress,
    onListen: ({ hostname, port }) => {
      logger.event("info", `metrics listening on http://${hostname}:${port}/metrics`);
    },
  }, createMetricsApp(config).fetch));
}

onStopSignals(async (signal) => {
  logger.event("info", "stopping: no new connections, waiting for requests in flight", {
    signal,
    in_flight: inFlightRequests(),
    timeout_seconds: config.shutdownTimeoutSeconds,
  });
  stdout.flush();
  const drained = await drainServers(servers, config.shutdownTimeoutSeconds * 1000);
  if (!drained) {
    logger.event("warn", "shutdown timeout reached: cutting the requests still in flight", {
      in_flight: inFlightRequests(),
    });
  }
  stopFollowingWriters();
  kv.close();
  logger.event("info", "stopped");
  stdout.flush();
  Deno.exit(0);
}, (signal) => {
  logger.event("warn", "second stop signal: exiting now", { signal });
  stdout.flush();
  Deno.exit(1);
});
