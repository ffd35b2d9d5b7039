/**
 * The headers the contract puts on responses, as ready-made lists: the
 * security headers of every response, and the protected-response headers of
 * every /api/v1 response (../shared/spec/client-api.md "Response headers"). Client API responses are
 * built with all of them at once (a cached body gets one cached list), so no
 * middleware has to set headers one by one on the hot path.
 */
import type { Context } from "hono";
import type { Config } from "../lib/config.ts";
import { rawPath } from "../lib/log.ts";
import { sha256Hex } from "../lib/secrets.ts";
import type { AnswerSigner } from "../signing/signing_keys.ts";
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
  ok(c: Context, body: Uint8Array<ArrayBuffer>, contentType?: string): Response;
  /**
   * The signature headers of an answer of `status` whose body hashes to
   * `sha256` (a download: the artifact's), or none with signing off.
   */
  signatureHeaders(c: Context, status: number, sha256: string): HeaderList;
  /** A JSON response with any status and extra headers (errors). */
  json(
    c: Context,
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
  /** Signing on: the body's SHA-256, and its signed answers by `METHOD path`. */
  sha256?: string;
  signed?: Map<string, Reused<CachedResponse>>;
}

/** Something signed, reused until `untilMs` while the signer's keys are those of `generation`. */
interface Reused<T> {
  value: T;
  untilMs: number;
  /** The signer's generation it was signed in (see `Signer.generation`). */
  generation: number;
}

/** How many signed answers one map keeps (then it starts over: odd paths cannot fill memory). */
const MAX_SIGNED = 1024;

/**
 * Every client API response carries `headers` besides its content headers;
 * with `signer` switched on, also the signature headers of docs/signing.md. A
 * cached body's signed answer is made once per method and path (as sent) and reused for
 * `signer.reuseSeconds` (its date and expiry are those of when it was signed).
 */
export function createApiResponder(headers: ResponseHeaders, signer?: AnswerSigner): ApiResponder {
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
  const signing = signer?.enabled === true ? signer : undefined;
  const signatureHeaders = (c: Context, status: number, sha256: string): HeaderList =>
    signing === undefined
      ? []
      : signing.sign({ method: c.req.method, path: rawPath(c.req.url), status, sha256 });
  /** `map`'s signed value at `at` while it may be reused, else `sign()`'s, kept for reuse. */
  const reuse = <T>(map: Map<string, Reused<T>>, at: string, sign: () => T): T => {
    const nowMs = Date.now();
    const kept = map.get(at);
    if (kept !== undefined && kept.untilMs > nowMs && kept.generation === signing!.generation) {
      return kept.value;
    }
    const value = sign();
    // Unsigned (no active key's file here): signed anew next time, so that the keys are read again.
    if (!signing!.signing) return value;
    if (map.size >= MAX_SIGNED) map.clear();
    map.set(at, {
      value,
      untilMs: nowMs + signing!.reuseSeconds * 1000,
      generation: signing!.generation,
    });
    return value;
  };
  // Error answers are made anew each time, but one client repeating a refused
  // request (a 429 flood, a poller with a revoked key) gets the same bytes:
  // their signatures are reused like a cached body's, so a flood of errors
  // does not cost an Ed25519 signature each.
  const signedErrors = new Map<string, Reused<HeaderList>>();
  const errorSignature = (c: Context, status: number, body: Uint8Array): HeaderList => {
    const sha256 = sha256Hex(body);
    return reuse(
      signedErrors,
      `${c.req.method} ${rawPath(c.req.url)} ${status} ${sha256}`,
      () => signatureHeaders(c, status, sha256),
    );
  };
  /** The signed answer of a cached body to the request of `c`, signed again when it is due. */
  const signedOf = (
    c: Context,
    entry: CachedResponse & { sha256: string },
    body: Uint8Array<ArrayBuffer>,
  ): CachedResponse =>
    reuse(entry.signed ??= new Map(), `${c.req.method} ${rawPath(c.req.url)}`, () => {
      const sig = signatureHeaders(c, 200, entry.sha256);
      return {
        template: new Response(body, { headers: [...entry.template.headers, ...sig] }),
        headHeaders: [...entry.headHeaders, ...sig],
      };
    });
  return {
    headers: fixed,
    ok(c, body, contentType) {
      let entry = cachedOf(body, contentType);
      if (signing !== undefined) {
        entry.sha256 ??= sha256Hex(body);
        entry = signedOf(c, entry as CachedResponse & { sha256: string }, body);
      }
      c.set("bodyBytes", body.byteLength);
      return c.req.method === "HEAD"
        ? new Response(body, { headers: entry.headHeaders })
        : entry.template.clone();
    },
    signatureHeaders,
    json(c, body, status, extra) {
      c.set("bodyBytes", body.byteLength);
      const list = listOf(body, extra);
      if (signing !== undefined) list.push(...errorSignature(c, status, body));
      return new Response(body, { status, headers: list });
    },
  };
}
