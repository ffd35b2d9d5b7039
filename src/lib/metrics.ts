/**
 * The service's Prometheus metrics: one registry for the process (Prometheus
 * scrapes a process, so the counters are process-wide, like prom-client's own
 * default registry). Code anywhere calls the small `record…` functions below;
 * `GET /metrics` renders the registry in the text exposition format.
 *
 * Every label has a small, fixed set of values: routes are matched route
 * patterns (never raw paths), methods outside the usual ones are `OTHER`,
 * reasons and operations are the union types below.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";

export const metricsRegistry = new Registry();
const registers = [metricsRegistry];

const requestsTotal = new Counter({
  name: "http_requests_total",
  help: "HTTP requests answered, by method, matched route pattern and status code.",
  labelNames: ["method", "route", "status"] as const,
  registers,
});

const requestDuration = new Histogram({
  name: "http_request_duration_seconds",
  help: "Time from request to response headers, by method and matched route pattern.",
  labelNames: ["method", "route"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

let inFlight = 0;

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

const KEY_CHECK_FAILURE_REASONS = ["missing", "invalid", "forbidden"] as const;
const KV_OPERATIONS = [
  "key_lookup",
  "rate_limit",
  "health",
  "key_usage",
  "download_count",
  "admin",
  "other",
] as const;
const UPLOAD_FAILURE_REASONS = ["too_large", "empty", "invalid", "error"] as const;

export type KeyCheckFailureReason = typeof KEY_CHECK_FAILURE_REASONS[number];
export type KvOperation = typeof KV_OPERATIONS[number];
export type UploadFailureReason = typeof UPLOAD_FAILURE_REASONS[number];

// Series with a fixed label set start at 0, so rate() and alerts see them before the first event.
for (const result of ["complete", "aborted"]) downloadsTotal.inc({ result }, 0);
for (const reason of KEY_CHECK_FAILURE_REASONS) keyCheckFailures.inc({ reason }, 0);
for (const operation of KV_OPERATIONS) kvErrors.inc({ operation }, 0);
for (const reason of UPLOAD_FAILURE_REASONS) uploadFailures.inc({ reason }, 0);

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

interface RequestSeries {
  count: { inc(): void };
  duration: { observe(value: number): void };
}

// Label children are looked up once per (method, route, status): the hot path
// then only bumps numbers instead of hashing label objects.
const requestSeries = new Map<string, RequestSeries>();

/** One answered request. `route` must be a route pattern (bounded), not a raw path. */
export function recordRequest(
  method: string,
  route: string,
  status: number,
  seconds: number,
): void {
  const id = `${method} ${route} ${status}`;
  let series = requestSeries.get(id);
  if (series === undefined) {
    const label = KNOWN_METHODS.has(method) ? method : "OTHER";
    series = {
      count: requestsTotal.labels(label, route, String(status)),
      duration: requestDuration.labels(label, route),
    };
    requestSeries.set(id, series);
  }
  series.count.inc();
  series.duration.observe(seconds);
}

/** +1 when a request arrives, -1 when its response (body included) is done. */
export function trackInFlight(delta: 1 | -1): void {
  inFlight += delta;
}

/** Requests still being handled or streamed; graceful shutdown reports it. */
export function inFlightRequests(): number {
  return inFlight;
}

export function recordDownloadStarted(): void {
  downloadsInFlight.inc();
}

/** Bytes of an artifact handed to the connection; called per chunk while streaming. */
export function recordDownloadBytes(bytes: number): void {
  downloadBytes.inc(bytes);
}

export function recordDownloadFinished(complete: boolean): void {
  downloadsInFlight.dec();
  downloadsTotal.inc({ result: complete ? "complete" : "aborted" });
}

export function recordRateLimited(): void {
  rateLimited.inc();
}

export function recordKeyCheckFailure(reason: KeyCheckFailureReason): void {
  keyCheckFailures.inc({ reason });
}

export function recordKvError(operation: KvOperation): void {
  kvErrors.inc({ operation });
}

/** A release artifact was stored; call once per successful upload. */
export function recordUpload(bytes: number): void {
  uploadsTotal.inc();
  uploadBytes.inc(bytes);
}

export function recordUploadFailure(reason: UploadFailureReason): void {
  uploadFailures.inc({ reason });
}

export const METRICS_CONTENT_TYPE = metricsRegistry.contentType;

/** The registry in the Prometheus text exposition format. */
export function renderMetrics(): Promise<string> {
  return metricsRegistry.metrics();
}
