/**
 * The reference client's HTTP side: options, the wire types, the failure
 * kinds, one request with the key, and the retry loop (429 after `Retry-After`,
 * network failures after a second).
 */

/** The reference client's version: its User-Agent and `--version`. */
export const CLIENT_VERSION = "1.0.0";

/** Names the client and its version in every request, e.g. `uds-update-client/1.0.0 Deno/2.9.6`. */
export const USER_AGENT = `uds-update-client/${CLIENT_VERSION} Deno/${Deno.version.deno}`;

export interface ClientOptions {
  /** The service's base address, e.g. `https://updates.example.com`. */
  baseUrl: string;
  /** The API key. Read it from the environment or a file, never from argv. */
  apiKey: string;
  /**
   * This install's id (client/install_id.ts `loadInstallId`), sent as
   * `X-Install-Id` on every request: staged rollouts and adoption count
   * installs by it (docs/rollouts.md "Who gets the release"). Without it the service
   * counts every install sharing the key as one client.
   */
  installId?: string;
  /** Retries after a 429 or a network failure (default 3). */
  retries?: number;
  /** Longest `Retry-After` the client is willing to wait, in seconds (default 60). */
  maxRetryAfterSeconds?: number;
  /** A request (or a download) that receives nothing for this long fails (default 30 000 ms). */
  idleTimeoutMs?: number;
  /**
   * Called before waiting to retry (after a 429 or a network failure), so a
   * program can say what it is waiting for and how long.
   */
  onRetry?: (retry: RetryNotice) => void;
  /**
   * The service's signing keys pinned at install (docs/signing.md): every
   * answer must carry a valid, unexpired signature of one of them.
   */
  trustedKeys?: ReadonlyArray<import("./signatures.ts").PublishedKey>;
  /** The clock for signature expiry (tests replay old answers). */
  now?: () => number;
  /** Replaceable for tests. */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

/** A retry about to happen: why, after how long, and which one. */
export interface RetryNotice {
  kind: "rate_limited" | "network";
  /** The failure being retried, e.g. `429 rate limit exceeded (/api/v1/releases/7/download)`. */
  message: string;
  waitMs: number;
  /** 1 for the first retry. */
  attempt: number;
  retries: number;
}

export interface Project {
  id: number;
  name: string;
  slug: string;
  description: string;
  latest_release_url: string;
}

export interface Release {
  id: number;
  version: string;
  build?: string;
  filename: string;
  checksum_sha256: string;
  size_bytes: number;
  content_type: string;
  release_notes: string;
  created_at: string;
  metadata_url: string;
  download_url: string;
}

/** What went wrong; the CLI maps each kind to an exit code. */
export type FailureKind =
  | "auth" // 401 or 403: missing, invalid, disabled or expired key, or no download permission
  | "not_found" // 404: unknown/inaccessible project or release, no release yet, artifact missing
  | "rate_limited" // 429 and the retries (or the longest acceptable wait) ran out
  | "integrity" // downloaded size or SHA-256 differs from the metadata
  | "network" // connection refused, reset, lost or idle too long, after the retries
  | "server" // 5xx or a response the client does not understand
  | "file" // the target or its .part file (or the file to publish) could not be read or written
  | "refused" // publish: the service refused the upload (400, 409, 413, 507)
  | "signature"; // a pinned key set is given and an answer's signature is bad, missing or expired

export class UpdateClientError extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly status?: number,
    /** Set on failures worth retrying: how long to wait first. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "UpdateClientError";
  }
}

/** What a request sends besides the key: a GET without a body unless told otherwise. */
export interface SendInit {
  method?: string;
  headers?: Record<string, string>;
  body?: BodyInit;
  /** Default: a timeout of `idleTimeoutMs`. */
  signal?: AbortSignal;
  /** `"manual"`: a redirect (3xx) is returned as it is, not followed. */
  redirect?: RequestRedirect;
}

/** Sends a request to `path` with the key; returns a 2xx response or throws an UpdateClientError. */
export async function send(
  options: ClientOptions,
  path: string,
  { method, headers, body, signal, redirect }: SendInit = {},
): Promise<Response> {
  const url = new URL(path, options.baseUrl);
  const doFetch = options.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(url, {
      method,
      headers: {
        ...headers,
        ...installIdHeader(options),
        "user-agent": USER_AGENT,
        authorization: `Bearer ${options.apiKey}`,
      },
      body,
      signal: signal ?? AbortSignal.timeout(options.idleTimeoutMs ?? 30_000),
      redirect,
    });
  } catch (error) {
    throw asClientError(error, url);
  }
  if (res.ok) return res;
  if (redirect === "manual" && res.status >= 300 && res.status < 400) return res;
  const message = `${res.status} ${await errorText(res)} (${url.pathname})`;
  if (res.status === 401 || res.status === 403) {
    throw new UpdateClientError("auth", message, res.status);
  }
  if (res.status === 404) throw new UpdateClientError("not_found", message, res.status);
  if (res.status === 429) {
    // A wait longer than the caller accepts is not retried (waiting less would earn another 429).
    const seconds = retryAfterSeconds(res.headers.get("retry-after"));
    const acceptable = seconds <= (options.maxRetryAfterSeconds ?? 60);
    throw new UpdateClientError(
      "rate_limited",
      message,
      429,
      acceptable ? seconds * 1000 : undefined,
    );
  }
  if (res.status === 416) return res; // handled by the download
  throw new UpdateClientError("server", message, res.status);
}

/** `X-Install-Id` when the options carry an install id, else nothing. */
export function installIdHeader(options: { installId?: string }): Record<string, string> {
  return options.installId ? { "x-install-id": options.installId } : {};
}

async function errorText(res: Response): Promise<string> {
  try {
    const body = await res.json();
    if (typeof body?.error === "string") return body.error;
  } catch { /* not JSON */ }
  return res.statusText || "error";
}

/** `Retry-After` as seconds: an integer, or an HTTP date; 1 when missing or unreadable. */
function retryAfterSeconds(header: string | null): number {
  if (header && /^\d+$/.test(header.trim())) return Number(header.trim());
  const date = header ? Date.parse(header) : NaN;
  return Number.isNaN(date) ? 1 : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** Runs `attempt` again after a retryable failure (429, network), up to `retries` times. */
export async function withRetries<T>(
  options: ClientOptions,
  attempt: () => Promise<T>,
): Promise<T> {
  const retries = options.retries ?? 3;
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  for (let i = 0;; i++) {
    try {
      return await attempt();
    } catch (error) {
      const failure = asClientError(error);
      if (failure.retryAfterMs === undefined || i >= retries) throw failure;
      if (failure.kind === "rate_limited" || failure.kind === "network") {
        options.onRetry?.({
          kind: failure.kind,
          message: failure.message,
          waitMs: failure.retryAfterMs,
          attempt: i + 1,
          retries,
        });
      }
      await sleep(failure.retryAfterMs);
    }
  }
}

/**
 * Maps fetch, stream and file errors onto the failure kinds. A network
 * failure names the host and path it was reaching (`url`), since fetch's own
 * message is often just "fetch failed".
 */
export function asClientError(error: unknown, url?: URL): UpdateClientError {
  if (error instanceof UpdateClientError) return error;
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
    return new UpdateClientError("file", String((error as Error).message));
  }
  const message = error instanceof Error ? error.message : String(error);
  // fetch reports refused, reset and cut connections as TypeError; the watchdog aborts.
  const timedOut = error instanceof DOMException &&
    (error.name === "TimeoutError" || error.name === "AbortError");
  if (error instanceof TypeError || timedOut || error instanceof Deno.errors.ConnectionReset) {
    const where = url ? ` reaching ${url.host}${url.pathname}` : "";
    return new UpdateClientError(
      "network",
      `network failure${where}: ${timedOut ? "timed out" : message}`,
      undefined,
      1000,
    );
  }
  return new UpdateClientError("server", message);
}

/** An abort signal that fires when `kick()` has not been called for `ms`. */
export function idleWatchdog(ms: number) {
  const controller = new AbortController();
  let timer = setTimeout(fire, ms);
  function fire() {
    controller.abort(new DOMException("idle timeout", "TimeoutError"));
  }
  return {
    signal: controller.signal,
    kick() {
      clearTimeout(timer);
      timer = setTimeout(fire, ms);
    },
    stop() {
      clearTimeout(timer);
    },
  };
}
