/**
 * The service's Prometheus metrics: `createMetrics()` makes one registry and
 * the small `record…` functions that feed it. main.ts makes one for the
 * process (Prometheus scrapes a process) and hands it to the app and the
 * metrics listener; an app built without one gets its own (tests). No state
 * lives at module level: two apps in one process count apart.
 * `GET /metrics` renders the registry in the text exposition format.
 *
 * Every label has a small, fixed set of values: routes are matched route
 * patterns (never raw paths), methods outside the usual ones are `OTHER`,
 * reasons and operations are the union types below.
 */
import { Counter, Gauge, Registry } from "prom-client";

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const KEY_CHECK_FAILURE_REASONS = ["missing", "invalid", "forbidden"] as const;
const KV_OPERATIONS = [
  "key_lookup",
  "rate_limit",
  "health",
  "key_usage",
  "download_count",
  "adoption",
  "reports",
  "admin",
  "other",
] as const;
const UPLOAD_FAILURE_REASONS = [
  "too_large",
  "empty",
  "invalid",
  "storage_full",
  "storage_unavailable",
  "error",
] as const;
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
]);

export type KeyCheckFailureReason = typeof KEY_CHECK_FAILURE_REASONS[number];
export type KvOperation = typeof KV_OPERATIONS[number];
export type UploadFailureReason = typeof UPLOAD_FAILURE_REASONS[number];

/** The requests of one (method, route, status): a plain number bumped per request. */
interface StatusSeries {
  labels: { method: string; route: string; status: string };
  count: number;
}

/**
 * The latencies of one (method, route): per-bucket counts (not cumulative)
 * in a typed array, the last slot for values above every bound.
 */
interface DurationSeries {
  labels: { method: string; route: string };
  buckets: Float64Array;
  sum: number;
  count: number;
  /** The request counts of this (method, route) by status. */
  statuses: Map<number, StatusSeries>;
}

/** A gauge read at scrape time from elsewhere (the KV): its samples. */
export interface ScrapedGauge {
  name: string;
  help: string;
  samples: Array<{ labels: Record<string, string>; value: number }>;
}

/** What the service records, and the registry that renders it. */
export interface Metrics {
  /** The Content-Type of `render()`'s text. */
  readonly contentType: string;
  /** The registry in the Prometheus text exposition format. */
  render(): Promise<string>;
  /** One answered request. `route` must be a route pattern (bounded), not a raw path. */
  recordRequest(method: string, route: string, status: number, seconds: number): void;
  /** +1 when a request arrives, -1 when its response (body included) is done. */
  trackInFlight(delta: 1 | -1): void;
  /** Requests still being handled or streamed; graceful shutdown reports it. */
  inFlightRequests(): number;
  recordDownloadStarted(): void;
  /** Bytes of an artifact handed to the connection; called per chunk while streaming. */
  recordDownloadBytes(bytes: number): void;
  recordDownloadFinished(complete: boolean): void;
  /**
   * An answer for a release's file or block map: its bytes, and what it
   * stands for in whole downloads (the file's size, or 0; docs/feeds.md).
   */
  recordDelivery(servedBytes: number, fullBytes: number): void;
  recordRateLimited(): void;
  recordKeyCheckFailure(reason: KeyCheckFailureReason): void;
  recordKvError(operation: KvOperation): void;
  /** A release artifact was stored; call once per successful upload. */
  recordUpload(bytes: number): void;
  recordUploadFailure(reason: UploadFailureReason): void;
  /** The artifact storage answers (`true`) or not; called when that changes. */
  recordStorageState(up: boolean): void;
  /** Gauges read at every scrape (rollouts and adoption, from the KV), rendered after the rest. */
  addScrapeSource(source: () => Promise<ScrapedGauge[]>): void;
}

/** A registry with the service's metrics, every fixed-label series at 0. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  const registers = [registry];

  // The two request metrics are recorded into these and turned into the
  // exposition format only when /metrics is scraped: prom-client would hash a
  // label object on every request. A request finds its series by route, method
  // and status without making a string; the lists keep the order series were
  // created in, which is the order prom-client shows them in. Both are shaped
  // for prom-client's registry, which renders them exactly as its own Counter
  // and Histogram.
  const seriesByRoute = new Map<string, Map<string, DurationSeries>>();
  const statusSeries: StatusSeries[] = [];
  const durationSeries: DurationSeries[] = [];
  let inFlight = 0;

  registerCollected(
    registry,
    {
      name: "http_requests_total",
      help: "HTTP requests answered, by method, matched route pattern and status code.",
      type: "counter",
    },
    () => statusSeries.map(({ labels, count }) => ({ labels, value: count })),
  );
  registerCollected(
    registry,
    {
      name: "http_request_duration_seconds",
      help: "Time from request to response headers, by method and matched route pattern.",
      type: "histogram",
    },
    () => durationSeries.flatMap(durationValues),
  );

  new Gauge({
    name: "http_requests_in_flight",
    help: "Requests being handled, streamed downloads included.",
    registers,
    collect() {
      this.set(inFlight);
    },
  });

  const downloadsTotal = new Counter({
    name: "uds_artifact_downloads_total",
    help: "Artifact downloads that ended: complete (every byte sent) or aborted (cut short).",
    labelNames: ["result"] as const,
    registers,
  });
  const downloadBytes = new Counter({
    name: "uds_artifact_download_bytes_total",
    help: "Artifact bytes actually streamed to clients (aborted downloads count what was sent).",
    registers,
  });
  const downloadsInFlight = new Gauge({
    name: "uds_artifact_downloads_in_flight",
    help: "Artifact downloads currently streaming.",
    registers,
  });
  const deliveredBytes = new Counter({
    name: "uds_delivered_bytes_total",
    help: "Bytes answered for release files and block maps (whole, ranges and block maps).",
    registers,
  });
  const fullDownloadBytes = new Counter({
    name: "uds_full_download_equivalent_bytes_total",
    help:
      "What the same downloads would have cost as whole files (differential updates counted as one).",
    registers,
  });
  const rateLimited = new Counter({
    name: "uds_rate_limited_total",
    help: "Client API requests refused with 429 by the rate limit.",
    registers,
  });
  const keyCheckFailures = new Counter({
    name: "uds_api_key_check_failures_total",
    help:
      "Client API requests refused by the key check: missing (401), invalid (401: unknown, disabled or expired), forbidden (403).",
    labelNames: ["reason"] as const,
    registers,
  });
  const kvErrors = new Counter({
    name: "uds_kv_errors_total",
    help: "Deno KV operations that failed, by the operation that needed them.",
    labelNames: ["operation"] as const,
    registers,
  });
  const uploadsTotal = new Counter({
    name: "uds_uploads_total",
    help: "Release artifacts uploaded and stored.",
    registers,
  });
  const uploadBytes = new Counter({
    name: "uds_upload_bytes_total",
    help: "Bytes of release artifacts uploaded and stored.",
    registers,
  });
  const uploadFailures = new Counter({
    name: "uds_upload_failures_total",
    help: "Release uploads refused or failed, by reason.",
    labelNames: ["reason"] as const,
    registers,
  });
  const storageUp = new Gauge({
    name: "uds_storage_up",
    help:
      "1 while the artifact storage answers, 0 once an S3 call got no answer (timeout, refused, 5xx) until one gets an answer again.",
    registers,
  });
  storageUp.set(1);
  const storageUnavailable = new Counter({
    name: "uds_storage_unavailable_total",
    help: "Times the artifact storage was found not answering (each change from up to down).",
    registers,
  });
  registerProcessGauges(registers);

  // Series with a fixed label set start at 0, so rate() and alerts see them before the first event.
  for (const result of ["complete", "aborted"]) downloadsTotal.inc({ result }, 0);
  for (const reason of KEY_CHECK_FAILURE_REASONS) keyCheckFailures.inc({ reason }, 0);
  for (const operation of KV_OPERATIONS) kvErrors.inc({ operation }, 0);
  for (const reason of UPLOAD_FAILURE_REASONS) uploadFailures.inc({ reason }, 0);

  const scrapeSources: Array<() => Promise<ScrapedGauge[]>> = [];
  return {
    contentType: registry.contentType,
    render: async () => (await registry.metrics()) + await renderScraped(scrapeSources),
    addScrapeSource(source) {
      scrapeSources.push(source);
    },
    recordRequest(method, route, status, seconds) {
      const label = KNOWN_METHODS.has(method) ? method : "OTHER";
      let byMethod = seriesByRoute.get(route);
      if (byMethod === undefined) seriesByRoute.set(route, byMethod = new Map());
      let duration = byMethod.get(label);
      if (duration === undefined) {
        duration = {
          labels: { method: label, route },
          buckets: new Float64Array(DURATION_BUCKETS.length + 1),
          sum: 0,
          count: 0,
          statuses: new Map(),
        };
        byMethod.set(label, duration);
        durationSeries.push(duration);
      }
      let series = duration.statuses.get(status);
      if (series === undefined) {
        series = { labels: { method: label, route, status: String(status) }, count: 0 };
        duration.statuses.set(status, series);
        statusSeries.push(series);
      }
      series.count++;
      let bucket = 0;
      while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]) bucket++;
      duration.buckets[bucket]++;
      duration.sum += seconds;
      duration.count++;
    },
    trackInFlight(delta) {
      inFlight += delta;
    },
    inFlightRequests: () => inFlight,
    recordDownloadStarted: () => downloadsInFlight.inc(),
    recordDownloadBytes: (bytes) => downloadBytes.inc(bytes),
    recordDownloadFinished(complete) {
      downloadsInFlight.dec();
      downloadsTotal.inc({ result: complete ? "complete" : "aborted" });
    },
    recordDelivery(servedBytes, fullBytes) {
      deliveredBytes.inc(servedBytes);
      fullDownloadBytes.inc(fullBytes);
    },
    recordRateLimited: () => rateLimited.inc(),
    recordKeyCheckFailure: (reason) => keyCheckFailures.inc({ reason }),
    recordKvError: (operation) => kvErrors.inc({ operation }),
    recordUpload(bytes) {
      uploadsTotal.inc();
      uploadBytes.inc(bytes);
    },
    recordUploadFailure: (reason) => uploadFailures.inc({ reason }),
    recordStorageState(up) {
      storageUp.set(up ? 1 : 0);
      if (!up) storageUnavailable.inc();
    },
  };
}

/** Metrics that record nothing: for `deno task bench`'s "metrics off" variant. */
export function noMetrics(): Metrics {
  const nothing = () => {};
  return {
    contentType: "text/plain; version=0.0.4; charset=utf-8",
    render: () => Promise.resolve(""),
    recordRequest: nothing,
    trackInFlight: nothing,
    inFlightRequests: () => 0,
    recordDownloadStarted: nothing,
    recordDownloadBytes: nothing,
    recordDownloadFinished: nothing,
    recordDelivery: nothing,
    recordRateLimited: nothing,
    recordKeyCheckFailure: nothing,
    recordKvError: nothing,
    recordUpload: nothing,
    recordUploadFailure: nothing,
    recordStorageState: nothing,
    addScrapeSource: nothing,
  };
}

function labelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** The gauges of the scrape sources in the text format; a failing source is left out (logged). */
async function renderScraped(sources: Array<() => Promise<ScrapedGauge[]>>): Promise<string> {
  const lines: string[] = [];
  for (const source of sources) {
    let gauges: ScrapedGauge[];
    try {
      gauges = await source();
    } catch (error) {
      console.error("a metrics source failed:", error);
      continue;
    }
    for (const { name, help, samples } of gauges) {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
      for (const { labels, value } of samples) {
        const text = Object.entries(labels).map(([key, v]) => `${key}="${labelValue(v)}"`);
        lines.push(`${name}${text.length ? `{${text.join(",")}}` : ""} ${value}`);
      }
    }
  }
  return lines.length === 0 ? "" : `\n${lines.join("\n")}\n`;
}

/**
 * Registers a metric whose values are collected at scrape time: prom-client's
 * registry asks it for its name, help and type and then for `get()`.
 */
function registerCollected(
  registry: Registry,
  meta: { name: string; help: string; type: "counter" | "histogram" },
  values: () => unknown[],
): void {
  const metric = { ...meta, aggregator: "sum" };
  registry.registerMetric(
    { ...metric, get: () => ({ ...metric, values: values() }) } as unknown as Parameters<
      Registry["registerMetric"]
    >[0],
  );
}

/** One histogram series as prom-client's Histogram exports it: cumulative buckets, sum, count. */
function durationValues({ labels, buckets, sum, count }: DurationSeries) {
  const name = "http_request_duration_seconds";
  let cumulative = 0;
  return [
    ...DURATION_BUCKETS.map((le, i) => {
      cumulative += buckets[i];
      return { labels: { le, ...labels }, value: cumulative, metricName: `${name}_bucket` };
    }),
    { labels: { le: "+Inf", ...labels }, value: count, metricName: `${name}_bucket` },
    { labels: { ...labels }, value: sum, metricName: `${name}_sum` },
    { labels: { ...labels }, value: count, metricName: `${name}_count` },
  ];
}

/** The process's memory, start time and uptime, read at scrape time. */
function registerProcessGauges(registers: Registry[]): void {
  const startTimeSeconds = Date.now() / 1000;
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers,
    collect() {
      this.set(Deno.memoryUsage().rss);
    },
  });
  new Gauge({
    name: "process_heap_used_bytes",
    help: "JavaScript heap in use, in bytes.",
    registers,
    collect() {
      this.set(Deno.memoryUsage().heapUsed);
    },
  });
  new Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since the Unix epoch, in seconds.",
    registers,
    collect() {
      this.set(startTimeSeconds);
    },
  });
  new Gauge({
    name: "process_uptime_seconds",
    help: "Seconds since the process started.",
    registers,
    collect() {
      this.set(Date.now() / 1000 - startTimeSeconds);
    },
  });
}
