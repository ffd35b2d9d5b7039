/**
 * Request metrics, the access log, and the spec's security headers on every
 * response not built with them: the outermost layer of every request.
 *
 * It costs two clock reads, a map lookup and (when logging) one access line
 * per request. Only bodies whose size is unknown up front (admin pages) and
 * artifact downloads are wrapped in a counting stream; downloads are logged
 * and counted when their last byte has been handed to the connection (or the
 * client went away), so the log shows the bytes actually sent.
 */
import type { Context, Handler, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv, ServiceDeps } from "./app_env.ts";
import type { AccessEntry } from "../lib/log.ts";
import type { Metrics } from "../lib/metrics.ts";
import { clientAddress } from "./client_address.ts";
import { mapJsonError } from "./errors.ts";
import { attachMeter } from "../lib/metered_stream.ts";
import type { OpenResponses } from "./open_responses.ts";
import { type HeaderList, isApiPath, setHeaders } from "./response_headers.ts";

/** How an error thrown by a handler becomes its response (a surface's error handler). */
export type ErrorMapper = (error: Error, c: Context<AppEnv>) => Response | Promise<Response>;

/**
 * The observation. There is one implementation, `endpoint`: a wrapper around
 * one handler, so that a client API route stays a single handler that Hono
 * calls directly (docs/benchmarks.md "The client API's hot path": Hono
 * middleware on /api/v1 measured at about 2 µs more a request in process,
 * several hundredths of the latest-release ratio). `middleware` is that same
 * wrapper around the rest of Hono's chain, for the routes that have
 * middleware anyway (admin pages, health, metrics, the publishing API).
 */
export interface Observer {
  /** Middleware for the routes outside the key-protected surfaces (client API, feeds, TUF). */
  middleware: MiddlewareHandler<AppEnv>;
  /**
   * `handler` observed without a middleware frame: for the routes of the
   * key-protected surfaces (src/client_api/surface.ts) and for the not-found
   * handler. Its errors are mapped by `mapError` here, so their responses are
   * observed too. A request the middleware already observes (a method no
   * route of /healthz takes) is not observed twice.
   */
  endpoint<P extends string>(
    handler: Handler<AppEnv, P>,
    mapError: ErrorMapper,
    /** True when `handler` is registered on one route only: its label is looked up once. */
    oneRoute?: boolean,
  ): Handler<AppEnv, P>;
}

/** One finished response, for its access-log line. */
interface Sent {
  /** `performance.now()` when the request arrived. */
  started: number;
  bytes: number;
  aborted: boolean;
  /** Milliseconds to the response (default: until now). */
  elapsedMs?: number;
}

export function createObserver(deps: ServiceDeps): Observer {
  const { logger, metrics, openResponses } = deps;
  const { trustProxy } = deps.config;
  const headers = deps.responseHeaders.security;

  /**
   * Everything after the response of `c` is known; may replace `c.res`
   * (counted bodies). `route`: the request's route label when the caller
   * knows it (else it is looked up).
   */
  function finish(c: Context<AppEnv>, started: number, route?: string): void {
    const res = c.res;
    const answeredMs = performance.now() - started;
    const method = c.req.method;
    if (!isApiPath(c.req.path)) ensureHeaders(res, headers);
    metrics.recordRequest(method, route ?? routeLabel(c), res.status, answeredMs / 1000);

    const isHead = method === "HEAD";
    const length = c.get("bodyBytes") ?? contentLength(res);
    const download = isDownload(c, res, isHead);
    // Reading `res.body` turns a fixed body into a stream and costs Deno.serve
    // its fast path, so it is touched only for downloads and unsized bodies.
    if (download || (logger && length === null && !isHead && res.body !== null)) {
      const counted = countedResponse(res, {
        length,
        metrics: download ? metrics : undefined,
        openResponses,
        onEnd: (bytes, complete) => {
          metrics.trackInFlight(-1);
          if (complete) c.get("onDownloaded")?.();
          logger?.access(accessEntry(c, { started, bytes, aborted: !complete }));
        },
      });
      // Setting `c.res` copies the response (Hono merges the old headers in): only when it changed.
      if (counted !== res) c.res = counted;
      return;
    }
    // A download handed to someone else (a redirect, X-Accel-Redirect) counts when answered.
    if (res.status < 400 && !isHead) c.get("onDownloaded")?.();
    metrics.trackInFlight(-1);
    if (logger) {
      const bytes = isHead || length === null ? 0 : length;
      logger.access(accessEntry(c, { started, bytes, aborted: false, elapsedMs: answeredMs }));
    }
  }

  /** The access log entry of the request in `c`. */
  function accessEntry(c: Context<AppEnv>, sent: Sent): AccessEntry {
    // An answer logged as it is made knows its elapsed time already: no third clock read.
    const elapsedMs = sent.elapsedMs ?? performance.now() - sent.started;
    return {
      // The wall-clock start, from the monotonic clock's elapsed time.
      startedMs: Math.round(Date.now() - elapsedMs),
      method: c.req.method,
      url: c.req.url,
      status: c.res.status,
      durationMs: elapsedMs,
      bytes: sent.bytes,
      client: clientAddress(c, trustProxy),
      keyId: c.get("keyId"),
      releaseId: c.get("releaseId"),
      userAgent: c.req.header("user-agent"),
      aborted: sent.aborted,
    };
  }

  function endpoint<P extends string>(
    handler: Handler<AppEnv, P>,
    mapError: ErrorMapper,
    oneRoute = false,
  ): Handler<AppEnv, P> {
    // The label of a handler registered on one route is looked up once.
    let route: string | undefined;
    const labelOf = (c: Context<AppEnv>) => oneRoute ? (route ??= routeLabel(c)) : undefined;
    /** Observes the response `res` of `c` and returns what to send (a download: counted). */
    const answered = (c: Context<AppEnv>, res: Response, started: number) => {
      // Setting `c.res` again would copy the response (Hono merges the old headers in).
      if (!c.finalized || c.res !== res) c.res = res;
      finish(c, started, labelOf(c));
      return c.res;
    };
    return (c, next) => {
      if (c.get("observed")) return handler(c, next);
      const started = performance.now();
      metrics.trackInFlight(1);
      let res;
      try {
        res = handler(c, next);
      } catch (error) {
        res = mapError(asError(error), c);
      }
      // Answered at once (the hot path: no promise, no closure), or later.
      if (!(res instanceof Promise)) return answered(c, res as Response, started);
      return res.then((value) => value, (error) => mapError(asError(error), c))
        .then((value) => answered(c, value as Response, started));
    };
  }

  // The rest of Hono's chain as one handler: its errors are already answered by
  // the app's or a surface's `onError` when `next()` returns.
  const restOfChain = endpoint(async (c, next) => {
    c.set("observed", true);
    await next();
    return c.res;
  }, mapJsonError);
  return {
    endpoint,
    middleware: async (c, next) => {
      await restOfChain(c, next);
    },
  };
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Sets the security headers on a response that lacks them. Client API
 * responses are built with them (src/http/response_headers.ts; a test checks
 * every kind of them), admin pages get them from `secureHeaders`.
 */
function ensureHeaders(res: Response, headers: HeaderList): void {
  if (headers.length > 0 && !res.headers.has("x-content-type-options")) {
    setHeaders(res.headers, headers);
  }
}

/** The Content-Length of `res`, or null. (Reading a response's headers costs Deno's fast path.) */
function contentLength(res: Response): number | null {
  const length = res.headers.get("content-length");
  return length === null ? null : Number(length);
}

/** An artifact download with a body to stream (the download route sets `releaseId`). */
function isDownload(c: Context<AppEnv>, res: Response, isHead: boolean): boolean {
  return c.get("releaseId") !== undefined && res.ok && !isHead && res.body !== null;
}

interface Counting {
  /** The response's Content-Length, or null. */
  length: number | null;
  /** For a download: the metrics its bytes and end move. */
  metrics: Metrics | undefined;
  /** Where the body is noted while it is sent, so a shutdown can end it. */
  openResponses: OpenResponses;
  /** Runs once, with the bytes sent and whether all of them went out. */
  onEnd: (bytes: number, complete: boolean) => void;
}

/** `res` with its body counted as it is sent. Downloads also move the download metrics. */
function countedResponse(res: Response, counting: Counting): Response {
  const { metrics } = counting;
  metrics?.recordDownloadStarted();
  // With a Content-Length the server cancels the stream after the last
  // byte instead of reading its end: all bytes sent is complete.
  const expected = counting.length ?? undefined;
  const source = res.body!;
  const body = countingStream(source, {
    onChunk: metrics && ((bytes) => metrics.recordDownloadBytes(bytes)),
    onEnd: (bytes, ended) => {
      const complete = ended || bytes === expected;
      metrics?.recordDownloadFinished(complete);
      counting.onEnd(bytes, complete);
    },
    open: counting.openResponses,
  });
  // A metered body counts itself: the response is sent as it is.
  return body === source ? res : new Response(body, res);
}

/**
 * `body`, counted: a metered stream (src/lib/metered_stream.ts, an artifact
 * file's) counts itself and is returned as it is; any other is passed through
 * a counting stream. `onEnd` runs once: with `true` after the stream's end was
 * read, with `false` when the consumer cancels (client gone, or the server has
 * sent the Content-Length) or the source fails.
 */
export function countingStream(
  body: ReadableStream<Uint8Array>,
  { onChunk, onEnd, open }: {
    onChunk?: (bytes: number) => void;
    onEnd: (bytes: number, complete: boolean) => void;
    /** Where the stream is noted while it runs, so it can be ended from outside. */
    open?: OpenResponses;
  },
): ReadableStream<Uint8Array> {
  let bytes = 0;
  let ended = false;
  const end = (complete: boolean) => {
    if (ended) return;
    ended = true;
    open?.delete(cut);
    onEnd(bytes, complete);
  };
  // While in `open`, the stream can be ended from outside as cut off.
  const cut = () => end(false);
  const chunk = (size: number) => {
    bytes += size;
    onChunk?.(size);
  };
  if (attachMeter(body, { chunk, end })) {
    open?.add(cut);
    return body;
  }
  const reader = body.getReader();
  open?.add(cut);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (error) {
        end(false);
        throw error;
      }
      if (read.done) {
        controller.close();
        end(true);
        return;
      }
      chunk(read.value.byteLength);
      controller.enqueue(read.value);
    },
    cancel(reason) {
      end(false);
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/**
 * The route pattern to label a request with: the last matched endpoint (not a
 * `use()` middleware, whose method is ALL), so a 429 thrown by a middleware
 * before its endpoint ran is still labelled with that endpoint.
 */
function routeLabel(c: Context<AppEnv>): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i].method !== "ALL") return routes[i].path;
  }
  // A middleware's pattern (the admin pages), or for a path nothing matched its area's.
  if (routes.length > 0) return routes[0].path;
  return isApiPath(c.req.path) ? "/api/v1/*" : "/*";
}
