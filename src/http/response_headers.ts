/**
 * The headers the contract puts on responses, as ready-made lists: the
 * security headers of every response, and the protected-response headers of
 * every /api/v1 response (../shared/spec/client-api.md "Response headers"). Client API responses are
 * built with all of them at once (a cached body gets one cached list), so no
 * middleware has to set headers one by one on the hot path.
 */
import type { Context } from "hono";
import type { Config } from "../lib/config.ts";
import type { AppEnv } from "./app_env.ts";
import { JSON_CONTENT_TYPE } from "./json.ts";

export type HeaderList = [string, string][];

/**
 * The spec's security headers, plus Cross-Origin-Resource-Policy (Hono's
 * default). Admin pages (HTML) also get Hono's document-only headers; JSON
 * and file responses skip those (COOP, Origin-Agent-Cluster,
 * X-DNS-Prefetch-Control, X-Download-Options, X-Permitted-Cross-Domain-Policies,
 * X-XSS-Protection): each header costs the hot path about half a microsecond.
 */
export function securityHeaders(config: Pick<Config, "https">): HeaderList {
  return [
    ["cross-origin-resource-policy", "same-origin"],
    ["referrer-policy", "no-referrer"],
    ...(config.https ? [["strict-transport-security", "max-age=31536000"]] as HeaderList : []),
    ["x-content-type-options", "nosniff"],
    ["x-frame-options", "DENY"],
  ];
}

/** Every response under /api/v1 (errors included) is private and uncacheable. */
export const PROTECTED_HEADERS: HeaderList = [
  ["cache-control", "no-store, private, max-age=0"],
  ["pragma", "no-cache"],
  ["expires", "0"],
  ["vary", "Authorization"],
  ["x-robots-tag", "noindex, nofollow"],
];

/** The headers added to responses: a dependency of the app, so the bench can measure them. */
export interface ResponseHeaders {
  /** On every response (client API responses are built with them; see observe.ts for the rest). */
  security: HeaderList;
  /** On every client API response besides. */
  protected: HeaderList;
}

/** The headers the contract asks for, as `config` sets them (HSTS with an https base URL). */
export function contractHeaders(config: Pick<Config, "https">): ResponseHeaders {
  return { security: securityHeaders(config), protected: PROTECTED_HEADERS };
}

/** Whether a request path belongs to the client API (whose responses carry PROTECTED_HEADERS). */
export function isApiPath(path: string): boolean {
  return path === "/api/v1" || path.startsWith("/api/v1/");
}

/** Sets each header of `list` on `headers` (for responses built elsewhere, e.g. downloads). */
export function setHeaders(headers: Headers, list: HeaderList): void {
  for (const [name, value] of list) headers.set(name, value);
}

/** Builds the JSON responses of the client API, every header included. */
export interface ApiResponder {
  /** The headers every client API response carries. */
  readonly headers: HeaderList;
  /**
   * A 200 JSON response of `body` to the request of `c`. A body that is
   * cached (one per record version) gets its header list made once and reused.
   * `contentType` (default JSON) is fixed for a body at its first answer (the feeds' YAML and XML).
   */
  ok(c: Context<AppEnv>, body: Uint8Array<ArrayBuffer>, contentType?: string): Response;
  /** A JSON response with any status and extra headers (errors). */
  json(
    c: Context<AppEnv>,
    body: Uint8Array<ArrayBuffer>,
    status: number,
    extra?: Record<string, string>,
  ): Response;
}

/**
 * A cached body's response, made once: `clone()` of it costs Deno about 15 µs
 * less per request than a new Response with the same header list (no header
 * validation, no conversion of the init). Without Content-Length: Deno.serve
 * sets it from the bytes, and an explicit one costs a few µs more.
 */
interface CachedResponse {
  template: Response;
  /** For HEAD: Hono answers it with the GET response's headers and no body, so the length is explicit. */
  headHeaders: HeaderList;
}

/** Every client API response carries `headers` besides its content headers. */
export function createApiResponder(headers: ResponseHeaders): ApiResponder {
  const fixed: HeaderList = [...headers.security, ...headers.protected];
  const cached = new WeakMap<Uint8Array, CachedResponse>();
  const listOf = (
    body: Uint8Array,
    extra?: Record<string, string>,
    contentType = JSON_CONTENT_TYPE,
  ): HeaderList => [
    ["content-type", contentType],
    ["content-length", String(body.byteLength)],
    ...fixed,
    ...Object.entries(extra ?? {}),
  ];
  const cachedOf = (body: Uint8Array<ArrayBuffer>, contentType?: string): CachedResponse => {
    let entry = cached.get(body);
    if (entry === undefined) {
      const headHeaders = listOf(body, undefined, contentType);
      entry = {
        template: new Response(body, { headers: headHeaders.slice(0, 1).concat(fixed) }),
        headHeaders,
      };
      cached.set(body, entry);
    }
    return entry;
  };
  return {
    headers: fixed,
    ok(c, body, contentType) {
      const entry = cachedOf(body, contentType);
      c.set("bodyBytes", body.byteLength);
      return c.req.method === "HEAD"
        ? new Response(body, { headers: entry.headHeaders })
        : entry.template.clone();
    },
    json(c, body, status, extra) {
      c.set("bodyBytes", body.byteLength);
      return new Response(body, { status, headers: listOf(body, extra) });
    },
  };
}
