/** The single entry point: read settings, open storage, serve, stop gracefully. */
import { dirname } from "node:path";
import { bootstrapAdmin, checkBreakGlassAccounts, checkFirstAdminSetting } from "./admin/mod.ts";
import { createApp } from "./app.ts";
import { ConfigError, isRemoteKv, loadConfig } from "./src/lib/config.ts";
import { createHealthChecks, healthDetailsHandler } from "./src/http/health.ts";
import { createMetricsApp, metricsAddressLabel } from "./src/http/metrics_route.ts";
import { createOpenResponses } from "./src/http/open_responses.ts";
import { createAdoptionRecorder } from "./src/reports/adoption_recorder.ts";
import { buildAggregates } from "./src/projects/aggregates.ts";
import { followOtherWriters } from "./src/kv/cache.ts";
import { getApiKey } from "./src/credentials/api_keys.ts";
import { deleteLegacySsoSessions } from "./src/accounts/sessions.ts";
import { createKeyUsageRecorder } from "./src/credentials/key_usage.ts";
import { createReportRecorder } from "./src/reports/report_recorder.ts";
import { keepServing, type KeptServer } from "./src/lib/keep_serving.ts";
import { createBufferedWriter, createLogger } from "./src/lib/log.ts";
import { createMetrics } from "./src/lib/metrics.ts";
import {
  makeFreshDirPrivate,
  makePrivateDir,
  openPrivateKv,
  openToOthersWarning,
} from "./src/lib/private_files.ts";
import { drainServers, onStopSignals } from "./src/lib/shutdown.ts";
import { dataDirStep, listenStep, StartupError } from "./src/lib/startup.ts";
import { createStore } from "./src/kv/store.ts";
import { scheduleRetention } from "./src/lifecycle/retention.ts";
import { scheduleSha512Backfill } from "./src/feeds/backfill.ts";
import { scheduleBlockMaps } from "./src/blockmap/background.ts";
import { scheduleVelopackDeltas } from "./src/deltas/background.ts";
import { rolloutGauges } from "./src/rollouts/metrics.ts";
import { gateGauges } from "./src/rollouts/gate_metrics.ts";
import { startGateEvaluator } from "./src/rollouts/gates.ts";
import { startWebhookWorker } from "./src/webhooks/worker.ts";
import { scheduleTufRefresh, tufGauges, tufSigningState } from "./src/tuf/freshness.ts";
import { createOnlineKeys } from "./src/tuf/repository.ts";
import {
  describeMissingKeyFiles,
  findMissingKeyFiles,
  noticeLine,
} from "./src/signing/key_file_check.ts";
import { openArtifactStore, scheduleSweeps, StorageUnavailableError } from "./src/storage/mod.ts";
import { createSsoService } from "./app.ts";

function readConfig() {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) exitWith(error.message);
    throw error;
  }
}

/** A start-up failure the operator can fix: one line, exit 1, no stack trace. */
function exitWith(message: string): never {
  console.error(`cannot start: ${message}`);
  Deno.exit(1);
}

/** How long a stop waits after the last answer was handed to the kernel (see the stop handler). */
const LINGER_MS = 1_500;

const config = readConfig();
const stdout = createBufferedWriter();
const logger = createLogger(config.logFormat, stdout.write);
/** One registry for the process, served by /metrics (on either listener). */
const metrics = createMetrics();
/** The responses being sent, ended as cut off when the shutdown timeout is reached. */
const openResponses = createOpenResponses();

/**
 * The data dir (0700; a fresh one is made so, an existing one used by others gets a
 * warning), the artifact store and the KV.
 */
async function openStorage(): Promise<
  { kv: Deno.Kv; artifacts: Awaited<ReturnType<typeof openArtifactStore>> }
> {
  await dataDirStep(
    config,
    { path: config.dataDir, what: "create" },
    () => makePrivateDir(config.dataDir),
  );
  // A fresh checkout's ./data (mode 755, only the keep file): made private instead of a warning.
  if (
    await dataDirStep(
      config,
      { path: config.dataDir, what: "chmod" },
      () => makeFreshDirPrivate(config.dataDir),
    )
  ) {
    logger.event("info", `made the new data directory ${config.dataDir} private (mode 700)`);
  }
  const warning = await dataDirStep(
    config,
    { path: config.dataDir, what: "read" },
    () => openToOthersWarning(config.dataDir),
  );
  if (warning !== null) logger.event("warn", warning);
  const artifacts = await dataDirStep(
    config,
    { path: config.artifactsDir, what: "create" },
    () => openArtifactStore(config, (up) => metrics.recordStorageState(up)),
  ).catch((error) => {
    if (error instanceof StorageUnavailableError) exitWith(`APP_STORAGE=s3: ${error.message}`);
    throw error;
  });
  if (!isRemoteKv(config.kvPath)) {
    await dataDirStep(
      config,
      { path: config.kvPath, what: "create" },
      () => makePrivateDir(dirname(config.kvPath)),
    );
  }
  const kv = await dataDirStep(
    config,
    { path: config.kvPath, what: "open" },
    () => openPrivateKv(config.kvPath),
  );
  return { kv, artifacts };
}

/** Serves `fetch` on `address`, restarting after faults such as running out of descriptors. */
function serve(
  setting: string,
  address: { hostname: string; port: number; reusePort?: boolean },
  { fetch, listening }: {
    fetch: (request: Request, info: Deno.ServeHandlerInfo) => Response | Promise<Response>;
    listening: (hostname: string, port: number) => unknown;
  },
): KeptServer {
  let port = address.port;
  return listenStep(setting, address, () =>
    keepServing((restarted) =>
      Deno.serve({
        // A restart takes the same port again, even when 0 (any port) was asked for.
        port,
        hostname: address.hostname,
        reusePort: address.reusePort,
        onListen: (addr) => {
          port = addr.port;
          if (!restarted) listening(addr.hostname, addr.port);
        },
      }, fetch), {
      down: (error) =>
        logger.event("warn", `${setting} server stopped accepting connections; restarting it`, {
          error: String(error),
          hint: "too many open connections? see docs/operators.md (Operations)",
        }),
      recovered: (downMs, restarts) =>
        logger.event("info", `${setting} server serving normally again`, {
          down_ms: downMs,
          restarts,
        }),
    }));
}

async function start() {
  const { kv, artifacts } = await openStorage();
  const store = createStore(kv, { cacheRefreshMs: config.cacheRefreshMs });
  // The first admin's setting is checked here, the account made once every listener is bound: a
  // start that fails (a port in use) leaves no account whose generated password nobody saw.
  await checkFirstAdminSetting(store, config);
  const breakGlass = await checkBreakGlassAccounts(store, config);
  if (breakGlass !== null) logger.event("warn", breakGlass);
  // The "listening" lines wait for that account, so whoever waits for them can sign in.
  const adminReady = Promise.withResolvers<void>();
  // The provider's tokens an older layout kept apart from the admin session (docs/sso.md).
  await deleteLegacySsoSessions(store).then(
    (deleted) => {
      if (deleted > 0) logger.event("info", "old SSO session entries deleted", { deleted });
    },
    (error) =>
      logger.event("warn", "old SSO session entries could not be deleted", {
        error: String(error),
      }),
  );
  // Once, for data written before the admin pages' aggregates existed (src/projects/aggregates.ts).
  // A KV that refuses writes still serves reads (the pages fall back to scans where they must).
  const builtAt = performance.now();
  const aggregates = await buildAggregates(store).catch((error) => {
    logger.event("warn", "admin aggregates could not be built", { error: String(error) });
    return "ready" as const;
  });
  if (aggregates !== "ready") {
    logger.event("info", `admin aggregates: ${aggregates}`, {
      ms: Math.round(performance.now() - builtAt),
    });
  }
  const stopFollowingWriters = followOtherWriters(store, config.cacheRefreshMs);
  // Private key files the records name but this data dir lacks (a restore from a backup without
  // them): each is an error with how to bring it back, also shown on the admin dashboard.
  await findMissingKeyFiles(store, config.dataDir).then(
    (missing) => {
      for (const notice of describeMissingKeyFiles(missing, { signing: config.signing })) {
        logger.event("error", noticeLine(notice));
      }
    },
    (error) =>
      logger.event("warn", "private key files could not be checked", { error: String(error) }),
  );
  // Parts of dead uploads and artifacts no release references (fs and s3 alike).
  scheduleSweeps(store, artifacts, (result) => {
    if ("error" in result) {
      logger.event("warn", `storage sweep failed: ${String(result.error)}`);
    } else if (result.removedUploads > 0 || result.removedArtifacts > 0) {
      logger.event("info", "storage sweep removed what an interrupted upload left", {
        removed_uploads: result.removedUploads,
        removed_artifacts: result.removedArtifacts,
      });
    }
  });
  // Projects' retention policies: each runs on one instance at a time (docs/admin-ui.md "Retention").
  scheduleRetention({ store, artifacts }, {
    instance: crypto.randomUUID(),
    everyMs: config.retentionIntervalMinutes * 60_000,
    checkEveryMs: Math.min(config.retentionIntervalMinutes * 60_000, 5 * 60_000),
    report: (error) => logger.event("warn", `retention run failed: ${String(error)}`),
    onDelete: ({ project, release, reason, leftForSweep }) => {
      logger.event("info", "retention deleted a release", {
        project: project.slug,
        release_id: release.id,
        version: release.version,
        state: release.state,
        size_bytes: release.size_bytes,
        reason,
        left_for_sweep: leftForSweep,
      });
    },
  });

  // Once, for releases stored before uploads computed SHA-512 (the updater feeds, docs/feeds.md).
  scheduleSha512Backfill({
    store,
    artifacts,
    report: logger.event,
  });

  // TUF metadata signed again before it expires, one instance at a time (docs/tuf.md "Freshness").
  const stopTufRefresh = scheduleTufRefresh(store, {
    online: createOnlineKeys(config.dataDir),
    report: logger.event,
  });

  // Block maps for electron-updater's differential downloads (docs/feeds.md): every release
  // stored before, then each upload right after it is committed.
  scheduleBlockMaps({
    store,
    artifacts,
    report: logger.event,
  });

  // Velopack's packages read and deltas built from older releases (docs/feeds.md
  // "Server-made deltas"), after each upload.
  scheduleVelopackDeltas({
    store,
    artifacts,
    report: logger.event,
    workDir: `${config.dataDir}/tmp/deltas`,
  });

  // Webhook deliveries from the KV outbox (docs/webhooks.md); one instance sends each.
  const webhooks = startWebhookWorker({
    store,
    allowPrivate: config.webhooksAllowPrivate,
    timeoutMs: config.webhooksTimeoutSeconds * 1000,
    keyName: async (keyId) => (await getApiKey(store, keyId))?.name ?? null,
    report: logger.event,
  });

  // Made here so that a stop writes the sightings still waiting (docs/rollouts.md "Adoption").
  const adoption = createAdoptionRecorder(store, {
    onKvError: () => metrics.recordKvError("adoption"),
    newIdsPerDay: config.adoptionNewIdsPerDay,
  });
  // Install reports likewise (docs/reports.md); a batch first writes the sightings it may trust.
  const reports = createReportRecorder(store, {
    onKvError: () => metrics.recordKvError("reports"),
    newIdsPerDay: config.reportsNewPerDay,
    settle: adoption.settle,
  });
  // Discovery of the OpenID Connect provider (docs/sso.md): one that cannot be reached is a warning
  // and tried again (until it answers or the process exits); sign-in through it waits for it.
  const sso = createSsoService({ config, store });
  sso?.start((message) => logger.event("warn", message));
  // Whether the database answers and takes writes (docs/operators.md "Health details").
  const health = createHealthChecks({
    kv,
    artifacts,
    metrics,
    serviceName: config.serviceName,
    moreDetails: async () => ({ tuf_signing: await tufSigningState(store) }),
  });
  const app = createApp({
    config,
    store,
    sso,
    health,
    artifacts,
    adoption,
    reports,
    rateLimitKv: config.rateLimitStore === "kv" ? kv : undefined,
    recordKeyUse: createKeyUsageRecorder(store, () => metrics.recordKvError("key_usage")),
    logger,
    metrics,
    openResponses,
  });
  // Rollout percentages and adoption (docs/rollouts.md "Prometheus"), read at every scrape.
  metrics.addScrapeSource(() => rolloutGauges(store, Date.now()));
  metrics.addScrapeSource(() => gateGauges(store));
  // Rollouts' health gates, evaluated on one instance at a time (docs/rollouts.md "Health gates").
  const gates = startGateEvaluator(store, {
    holder: crypto.randomUUID(),
    report: (error) => logger.event("warn", `rollout gates evaluation failed: ${String(error)}`),
  });
  metrics.addScrapeSource(health.gauges);
  // How fresh the TUF metadata is, and whether its signing is stuck (docs/tuf.md "Freshness").
  metrics.addScrapeSource(() => tufGauges(store, Date.now()));

  // Requests that arrive before bootstrapAdmin is done wait for it: at a first start, while the
  // generated password is hashed, so that nobody is told "wrong password" by a service just up.
  let answer = (
    request: Request,
    info: Deno.ServeHandlerInfo,
  ): Response | Promise<Response> => adminReady.promise.then(() => app.fetch(request, info));
  const servers: KeptServer[] = [];
  servers.push(
    serve("APP_PORT", { hostname: config.host, port: config.port, reusePort: config.reusePort }, {
      fetch: (request, info) => answer(request, info),
      listening: (hostname, port) =>
        adminReady.promise.then(() =>
          logger.event(
            "info",
            `${config.serviceName} listening on http://${hostname}:${port} (data in ${config.dataDir})`,
            { metrics: metricsAddressLabel(config) },
          )
        ),
    }),
  );

  if (config.metricsAddress !== undefined) {
    servers.push(
      serve("APP_METRICS_ADDRESS", config.metricsAddress, {
        fetch: createMetricsApp(
          config,
          metrics,
          healthDetailsHandler(health, config.metricsToken),
        ).fetch,
        listening: (hostname, port) =>
          adminReady.promise.then(() =>
            logger.event("info", `metrics listening on http://${hostname}:${port}/metrics`)
          ),
      }),
    );
  }
  await bootstrapAdmin(store, config, (message) => logger.event("warn", message));
  answer = app.fetch;
  adminReady.resolve();
  return { kv, servers, stopFollowingWriters, stopTufRefresh, webhooks, adoption, reports, gates };
}

let started: Awaited<ReturnType<typeof start>>;
try {
  started = await start();
} catch (error) {
  if (error instanceof StartupError) exitWith(error.message);
  throw error;
}
const { kv, servers, stopFollowingWriters, stopTufRefresh, webhooks, adoption, reports, gates } =
  started;

onStopSignals({
  stop: async (signal) => {
    logger.event("info", "stopping: no new connections, waiting for requests in flight", {
      signal,
      in_flight: metrics.inFlightRequests(),
      timeout_seconds: config.shutdownTimeoutSeconds,
    });
    stdout.flush();
    // Streamed bodies (downloads, pages of unknown length) being sent when the stop came.
    const streaming = openResponses.count() > 0;
    const drained = await drainServers(servers, config.shutdownTimeoutSeconds * 1000);
    // The last bytes of the bodies just finished may still wait in the kernel's
    // socket buffers. On a host the kernel sends them after the process is gone;
    // in a container its network goes with the process, and they would be lost.
    if (drained && streaming) await new Promise((resolve) => setTimeout(resolve, LINGER_MS));
    if (!drained) {
      logger.event("warn", "shutdown timeout reached: cutting the requests still in flight", {
        in_flight: metrics.inFlightRequests(),
      });
      // Downloads still streaming get their access-log line, marked aborted.
      openResponses.endAll();
    }
    stopFollowingWriters();
    stopTufRefresh();
    webhooks.stop();
    gates.stop();
    // The sightings still waiting are written, unless the KV takes longer than a few seconds.
    await Promise.race([
      Promise.all([adoption.flush(), reports.flush()]),
      new Promise((resolve) => setTimeout(resolve, 5_000)),
    ]);
    kv.close();
    logger.event("info", "stopped");
    stdout.flush();
    Deno.exit(0);
  },
  repeated: (signal) => {
    logger.event("info", "stop signal repeated within a second: still draining", { signal });
  },
  force: (signal) => {
    logger.event("warn", "second stop signal: exiting now", { signal });
    openResponses.endAll();
    stdout.flush();
    Deno.exit(1);
  },
});
