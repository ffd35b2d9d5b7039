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
import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import type { AppDeps, AppEnv } from "./app_env.ts";
import type { AccessEntry } from "../lib/log.ts";
import {
  recordDownloadBytes,
  recordDownloadFinished,
  recordDownloadStarted,
  recordRequest,
  trackInFlight,
} from "../lib/metrics.ts";
import { clientAddress } from "./client_address.ts";
import { type HeaderList, isApiPath, securityHeaders, setHeaders } from "./response_headers.ts";

/** How an error thrown by a handler becomes its response (the app's `onError`). */
export type ErrorMapper = (error: Error, c: Context<AppEnv>) => Response | Promise<Response>;

/** The observation, in the two forms a route can take it. */
export interface Observer {
  /** Middleware for the routes outside the client API (admin pages, health, metrics). */
  middleware: MiddlewareHandler<AppEnv>;
  /**
   * `handler` observed without a middleware frame (Hono composes a chain of
   * two handlers through promises; a route with one handler is called
   * directly, about 1.5 µs less a request): for the client API's routes and
   * for the not-found handler. Its errors are mapped by `mapError` here, so
   * their responses are observed too. A request a middleware already
   * observes (an unknown path under /admin) is not observed twice.
   */
  endpoint<P extends string>(
    handler: Handler<AppEnv, P>,
    mapError: ErrorMapper,
    /** True when `handler` is registered on one route only: its label is looked up once. */
    oneRoute?: boolean,
  ): Handler<AppEnv, P>;
}

export function createObserver(deps: AppDeps): Observer {
  const { logger } = deps;
  const { trustProxy } = deps.config;
  const metricsOn = deps.benchOff !== "metrics";
  const headers = deps.benchOff === "headers" ? [] : securityHeaders(deps.config);

  /**
   * Everything after the response of `c` is known; may replace `c.res`
   * (counted bodies). `route`: the request's route label when the caller
   * knows it (else it is looked up).
   */
  function finish(c: Context<AppEnv>, started: number, startedMs: number, route?: string): void {
    const res = c.res;
    const answeredMs = performance.now() - started;
    const method = c.req.method;
    if (!isApiPath(c.req.path)) ensureHeaders(res, headers);
    if (metricsOn) recordRequest(method, route ?? routeLabel(c), res.status, answeredMs / 1000);

    const isHead = method === "HEAD";
    const length = c.get("bodyBytes") ?? contentLength(res);
    const download = isDownload(c, res, isHead);
    // Reading `res.body` turns a fixed body into a stream and costs Deno.serve
    // its fast path, so it is touched only for downloads and unsized bodies.
    if (download || (logger && length === null && !isHead && res.body !== null)) {
      c.res = countedResponse(res, length, download, (bytes, complete) => {
        trackInFlight(-1);
        if (complete) c.get("onDownloaded")?.();
        logger?.access(accessEntry(c, method, startedMs, trustProxy, bytes, !complete, started));
      });
      return;
    }
    // A download handed to someone else (a redirect, X-Accel-Redirect) counts when answered.
    if (res.status < 400 && !isHead) c.get("onDownloaded")?.();
    trackInFlight(-1);
    if (logger) {
      const bytes = isHead || length === null ? 0 : length;
      logger.access(
        accessEntry(c, method, startedMs, trustProxy, bytes, false, started, answeredMs),
      );
    }
  }

  /** Observes the response `res` of `c` and returns what to send (a download: counted). */
  function answered(
    c: Context<AppEnv>,
    res: Response,
    started: number,
    startedMs: number,
    route: string | undefined,
  ): Response {
    c.res = res;
    finish(c, started, startedMs, route);
    return c.res;
  }

  return {
    middleware: createMiddleware<AppEnv>(async (c, next) => {
      const started = performance.now();
      const startedMs = logger ? Date.now() : 0;
      c.set("observed", true);
      trackInFlight(1);
      try {
        await next();
      } catch (error) {
        trackInFlight(-1);
        throw error;
      }
      finish(c, started, startedMs);
    }),
    endpoint: (handler, mapError, oneRoute = false) => {
      // The label of a handler registered on one route is looked up once.
      let route: string | undefined;
      const labelOf = (c: Context<AppEnv>) => oneRoute ? (route ??= routeLabel(c)) : undefined;
      return (c, next) => {
        if (c.get("observed")) return handler(c, next);
        const started = performance.now();
        const startedMs = logger ? Date.now() : 0;
        trackInFlight(1);
        let res;
        try {
          res = handler(c, next);
        } catch (error) {
          res = mapError(asError(error), c);
        }
        // Answered at once (the hot path: no promise, no closure), or later.
        if (!(res instanceof Promise)) {
          return answered(c, res as Response, started, startedMs, labelOf(c));
        }
        return res.then((value) => value, (error) => mapError(asError(error), c))
          .then((value) => answered(c, value as Response, started, startedMs, labelOf(c)));
      };
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

/**
 * `res` with its body counted as it is sent. `onEnd` runs once, with whether
 * all of it went out. Downloads also move the download metrics.
 */
function countedResponse(
  res: Response,
  length: number | null,
  download: boolean,
  onEnd: (bytes: number, complete: boolean) => void,
): Response {
  if (download) recordDownloadStarted();
  // With a Content-Length the server cancels the stream after the last
  // byte instead of reading its end: all bytes sent is complete.
  const expected = length ?? undefined;
  const body = countingStream(
    res.body!,
    download ? recordDownloadBytes : undefined,
    (bytes, ended) => {
      const complete = ended || bytes === expected;
      if (download) recordDownloadFinished(complete);
      onEnd(bytes, complete);
    },
    openResponses,
  );
  return new Response(body, res);
}

/** How to end each body still being sent (see `endOpenResponses`). */
const openResponses = new Set<() => void>();

/**
 * Ends every response still being sent as cut off: its access-log line is
 * written, marked `aborted`, and a download counts as unfinished. For the
 * shutdown timeout, just before the process exits.
 */
export function endOpenResponses(): void {
  for (const cut of [...openResponses]) cut();
}

/** The access log entry of the request in `c`. */
function accessEntry(
  c: Context<AppEnv>,
  method: string,
  startedMs: number,
  trustProxy: boolean,
  bytes: number,
  aborted: boolean,
  started: number,
  elapsedMs = performance.now() - started,
): AccessEntry {
  return {
    startedMs,
    method,
    url: c.req.url,
    status: c.res.status,
    durationMs: elapsedMs,
    bytes,
    client: clientAddress(c, trustProxy),
    keyId: c.get("keyId"),
    releaseId: c.get("releaseId"),
    userAgent: c.req.header("user-agent"),
    aborted,
  };
}

/**
 * Passes `body` through, counting bytes. `onEnd` runs once: with `true` after
 * the stream's end was read, with `false` when the consumer cancels (client
 * gone, or the server has sent the Content-Length) or the source fails.
 */
export function countingStream(
  body: ReadableStream<Uint8Array>,
  onChunk: ((bytes: number) => void) | undefined,
  onEnd: (bytes: number, complete: boolean) => void,
  open?: Set<() => void>,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
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
  open?.add(cut);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        end(false);
        throw error;
      }
      if (chunk.done) {
        controller.close();
        end(true);
        return;
      }
      bytes += chunk.value.byteLength;
      onChunk?.(chunk.value.byteLength);
      controller.enqueue(chunk.value);
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
