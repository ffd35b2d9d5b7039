/**
 * The outermost middleware: request metrics and the access log.
 *
 * It costs a clock read, a map lookup and (when logging) one JSON line per
 * request. Only bodies whose size is unknown up front (admin pages) and
 * artifact downloads are wrapped in a counting stream; downloads are logged
 * and counted when their last byte has been handed to the connection (or the
 * client went away), so the log shows the bytes actually sent.
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { matchedRoutes, routePath } from "hono/route";
import type { AppDeps, AppEnv } from "./app_env.ts";
import type { AccessLogRecord } from "../lib/log.ts";
import {
  recordDownloadBytes,
  recordDownloadFinished,
  recordDownloadStarted,
  recordRequest,
  trackInFlight,
} from "../lib/metrics.ts";
import { clientAddress } from "./client_address.ts";

const MAX_USER_AGENT = 256;

export function observeRequests(deps: AppDeps) {
  const { logger } = deps;
  const { trustProxy } = deps.config;

  return createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now();
    const time = logger ? isoTimeNow() : "";
    trackInFlight(1);
    try {
      await next();
    } catch (error) {
      trackInFlight(-1);
      throw error;
    }
    const res = c.res;
    const answeredMs = performance.now() - started;
    if (deps.benchOff !== "metrics") {
      recordRequest(c.req.method, routeLabel(c), res.status, answeredMs / 1000);
    }

    // Reading `res.body` turns a fixed body into a stream and costs Deno.serve
    // its fast path, so it is touched only for downloads and unsized bodies.
    const releaseId = c.get("releaseId");
    const isHead = c.req.method === "HEAD";
    if (isHead && releaseId !== undefined) {
      // Hono answers HEAD with the GET handler's headers and drops its body:
      // release the body (an open artifact file) instead of leaking it.
      res.body?.cancel().catch(() => {});
    }
    const isDownload = releaseId !== undefined && res.ok && !isHead && res.body !== null;
    const length = res.headers.get("content-length");
    const body = isDownload || (logger && length === null && !isHead) ? res.body : null;

    const record = (bytes: number, aborted: boolean, elapsedMs: number): AccessLogRecord => {
      const entry: AccessLogRecord = {
        time,
        method: c.req.method,
        path: rawPath(c.req.url),
        status: res.status,
        duration_ms: Math.round(elapsedMs * 1000) / 1000,
        bytes,
        client: clientAddress(c, trustProxy),
      };
      const keyId = c.get("keyId");
      if (keyId !== undefined) entry.key_id = keyId;
      if (releaseId !== undefined) entry.release_id = releaseId;
      const userAgent = c.req.header("user-agent");
      if (userAgent) entry.user_agent = userAgent.slice(0, MAX_USER_AGENT);
      if (aborted) entry.aborted = true;
      return entry;
    };

    if (body !== null) {
      if (isDownload) recordDownloadStarted();
      // With a Content-Length the server cancels the stream after the last
      // byte instead of reading its end: all bytes sent is complete.
      const expected = length === null ? undefined : Number(length);
      c.res = new Response(
        countingStream(body, isDownload ? recordDownloadBytes : undefined, (bytes, ended) => {
          const complete = ended || bytes === expected;
          trackInFlight(-1);
          if (isDownload) recordDownloadFinished(complete);
          logger?.access(record(bytes, !complete, performance.now() - started));
        }),
        res,
      );
      return;
    }
    trackInFlight(-1);
    logger?.access(record(isHead || length === null ? 0 : Number(length), false, answeredMs));
  });
}

let isoMs = 0;
let isoText = "";

/** `new Date().toISOString()`, made once per millisecond (a busy server answers many in one). */
function isoTimeNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

/** The path part of a request URL exactly as sent: still percent-encoded, no query string. */
export function rawPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
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
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let bytes = 0;
  let ended = false;
  const end = (complete: boolean) => {
    if (ended) return;
    ended = true;
    onEnd(bytes, complete);
  };
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
  return routePath(c);
}
