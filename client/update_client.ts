/**
 * Reference update client for the Update Distribution Service (client API v1).
 *
 * Copy this file into your app. It needs only Web APIs, `Deno` file APIs and
 * `node:crypto`. The whole flow:
 *
 * ```ts
 * const options = { baseUrl: "https://updates.example.com", apiKey: Deno.env.get("UPDATE_API_KEY")! };
 * const update = await checkForUpdate({ ...options, project: "desktop", currentVersion: "1.4.2" });
 * if (update.available) {
 *   await downloadRelease({ ...options, release: update.release, target: "./desktop-new.bin" });
 * }
 * ```
 *
 * - Version rule: when both versions parse as semver (an optional leading `v`
 *   is allowed), the release is newer when it has higher semver precedence;
 *   otherwise any difference counts as an update (plain inequality).
 * - Downloads go to `<target>.part`; `<target>.part.json` remembers which
 *   release and which ETag the part belongs to. A later call resumes with
 *   `Range` + `If-Range`, and accepts a `200` instead (restarts from zero).
 * - Size and SHA-256 are checked while streaming; the file is renamed onto
 *   `target` only when both match the release metadata.
 * - `429` (after `Retry-After`) and network failures are retried; every other
 *   failure throws an `UpdateClientError` whose `kind` says what went wrong.
 */
import { createHash, type Hash } from "node:crypto";

export interface ClientOptions {
  /** The service's base address, e.g. `https://updates.example.com`. */
  baseUrl: string;
  /** The API key. Read it from the environment or a file, never from argv. */
  apiKey: string;
  /** Retries after a 429 or a network failure (default 3). */
  retries?: number;
  /** Longest `Retry-After` the client is willing to wait, in seconds (default 60). */
  maxRetryAfterSeconds?: number;
  /** A request (or a download) that receives nothing for this long fails (default 30 000 ms). */
  idleTimeoutMs?: number;
  /** Replaceable for tests. */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
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

export interface UpdateCheck {
  available: boolean;
  project: Project;
  release: Release;
}

/** What went wrong; the CLI maps each kind to an exit code. */
export type FailureKind =
  | "auth" // 401 or 403: missing, invalid, disabled or expired key, or no download permission
  | "not_found" // 404: unknown/inaccessible project or release, no release yet, artifact missing
  | "rate_limited" // 429 and the retries (or the longest acceptable wait) ran out
  | "integrity" // downloaded size or SHA-256 differs from the metadata
  | "network" // connection refused, reset, lost or idle too long, after the retries
  | "server" // 5xx or a response the client does not understand
  | "file"; // the target or its .part file could not be read or written

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

// ---------------------------------------------------------------- versions

const SEMVER =
  /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$/i;

interface SemVer {
  core: [bigint, bigint, bigint];
  pre: string[];
}

export function parseSemver(text: string): SemVer | null {
  const m = SEMVER.exec(text.trim());
  if (!m) return null;
  return { core: [BigInt(m[1]), BigInt(m[2]), BigInt(m[3])], pre: m[4] ? m[4].split(".") : [] };
}

/**
 * Semver precedence of `a` against `b` (-1, 0 or 1; build metadata ignored),
 * or null when either is not a semantic version.
 */
export function compareVersions(a: string, b: string): -1 | 0 | 1 | null {
  const x = parseSemver(a), y = parseSemver(b);
  if (!x || !y) return null;
  for (let i = 0; i < 3; i++) {
    if (x.core[i] !== y.core[i]) return x.core[i] > y.core[i] ? 1 : -1;
  }
  // A version without pre-release identifiers ranks above one with them.
  if (!x.pre.length || !y.pre.length) {
    return x.pre.length === y.pre.length ? 0 : x.pre.length ? -1 : 1;
  }
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    if (i >= x.pre.length) return -1;
    if (i >= y.pre.length) return 1;
    const p = x.pre[i], q = y.pre[i];
    if (p === q) continue;
    const pNum = /^\d+$/.test(p), qNum = /^\d+$/.test(q);
    if (pNum && qNum) return BigInt(p) > BigInt(q) ? 1 : -1;
    if (pNum !== qNum) return pNum ? -1 : 1; // numeric identifiers rank lower
    return p > q ? 1 : -1;
  }
  return 0;
}

/** The version rule: semver precedence when both parse, otherwise plain inequality. */
export function isNewerVersion(candidate: string, current: string): boolean {
  const order = compareVersions(candidate, current);
  return order === null ? candidate.trim() !== current.trim() : order > 0;
}

// ---------------------------------------------------------------- check

export async function checkForUpdate(
  options: ClientOptions & { project: string; currentVersion: string },
): Promise<UpdateCheck> {
  const path = `/api/v1/projects/${encodeURIComponent(options.project)}/releases/latest`;
  const { project, release } = await getEnvelope(options, path);
  return { available: isNewerVersion(release.version, options.currentVersion), project, release };
}

/** Release metadata by id (`/api/v1/releases/{id}`). */
export async function getRelease(options: ClientOptions, releaseId: number): Promise<Release> {
  return (await getEnvelope(options, `/api/v1/releases/${releaseId}`)).release;
}

async function getEnvelope(
  options: ClientOptions,
  path: string,
): Promise<{ project: Project; release: Release }> {
  const envelope = await withRetries(options, async () => {
    const res = await send(options, path, {});
    return await res.json().catch((error) => {
      if (error instanceof SyntaxError) return null; // not JSON: reported below
      throw error; // the connection broke while reading
    });
  });
  const release = envelope?.release;
  if (typeof release?.version !== "string" || typeof release.download_url !== "string") {
    throw new UpdateClientError("server", `the service answered ${path} without release metadata`);
  }
  return envelope;
}

// ---------------------------------------------------------------- download

export interface DownloadResult {
  /** Bytes this call received from the network (less than the size when it resumed). */
  receivedBytes: number;
  resumed: boolean;
}

export interface DownloadOptions extends ClientOptions {
  release: Release;
  /** Where the verified file ends up; `<target>.part` and `<target>.part.json` sit beside it. */
  target: string;
  onProgress?: (bytes: number, total: number) => void;
}

interface PartState {
  release_id: number;
  checksum_sha256: string;
  size_bytes: number;
  /** Strong ETag of the response that wrote the part, for `If-Range`. */
  etag: string | null;
}

/**
 * Downloads `release` to `target`: resumes a `<target>.part` left by an
 * earlier attempt, verifies size and SHA-256, then renames it into place.
 */
export function downloadRelease(
  options: DownloadOptions,
): Promise<DownloadResult> {
  let receivedBytes = 0;
  let resumed = false;
  return withRetries(options, async () => {
    const result = await downloadOnce(options, (n) => receivedBytes += n);
    resumed ||= result.resumed;
    return { receivedBytes, resumed };
  });
}

async function downloadOnce(
  options: DownloadOptions,
  onReceived: (bytes: number) => void,
): Promise<{ resumed: boolean }> {
  const { release, target } = options;
  const partPath = `${target}.part`, statePath = `${target}.part.json`;
  const state = await readPartState(partPath, statePath, release);

  // Hash what an earlier attempt left, before asking for the rest.
  const partHash = createHash("sha256");
  const partSize = state ? await hashFile(partPath, partHash) : 0;
  if (state && partSize === release.size_bytes) {
    await finish(partPath, statePath, target, partHash, partSize, release, true);
    return { resumed: true };
  }

  const headers: Record<string, string> = {};
  if (state) {
    headers.range = `bytes=${partSize}-`;
    if (state.etag) headers["if-range"] = state.etag;
  }
  const watchdog = idleWatchdog(options.idleTimeoutMs ?? 30_000);
  try {
    const res = await send(options, release.download_url, headers, watchdog.signal);
    // 206 continues the part; 200 is the whole file (no range support, or
    // If-Range did not match): start again from zero.
    const resumed = state !== null && res.status === 206 &&
      contentRangeStart(res.headers.get("content-range")) === partSize;
    if (!resumed && res.status !== 200) {
      await res.body?.cancel();
      await discard(partPath, statePath);
      throw new UpdateClientError(
        "server",
        `unexpected ${res.status} to a range request`,
        res.status,
        0,
      );
    }
    const hash = resumed ? partHash : createHash("sha256");
    let size = resumed ? partSize : 0;
    const etag = res.headers.get("etag");
    await writeJson(
      statePath,
      {
        release_id: release.id,
        checksum_sha256: release.checksum_sha256,
        size_bytes: release.size_bytes,
        etag: etag && !etag.startsWith("W/") ? etag : null, // If-Range needs a strong ETag
      } satisfies PartState,
    );

    const file = await openFile(
      partPath,
      resumed ? { append: true } : { write: true, create: true, truncate: true },
    );
    try {
      for await (const chunk of res.body ?? []) {
        watchdog.kick();
        if (size + chunk.byteLength > release.size_bytes) {
          await discard(partPath, statePath);
          throw new UpdateClientError(
            "integrity",
            `download rejected: more than ${release.size_bytes} bytes`,
          );
        }
        hash.update(chunk);
        await writeAll(file, chunk, partPath);
        size += chunk.byteLength;
        onReceived(chunk.byteLength);
        options.onProgress?.(size, release.size_bytes);
      }
      await file.sync();
    } finally {
      file.close();
    }
    await finish(partPath, statePath, target, hash, size, release, resumed);
    return { resumed };
  } catch (error) {
    throw asClientError(error);
  } finally {
    watchdog.stop();
  }
}

/**
 * Renames the part onto the target when size and SHA-256 match; otherwise
 * deletes it. A resumed download that fails is retried once from zero, in
 * case the bytes kept from the earlier attempt were the bad ones.
 */
async function finish(
  partPath: string,
  statePath: string,
  target: string,
  hash: Hash,
  size: number,
  release: Release,
  resumed: boolean,
): Promise<void> {
  const digest = hash.digest("hex");
  if (size !== release.size_bytes || digest !== release.checksum_sha256.toLowerCase()) {
    await discard(partPath, statePath);
    const what = size !== release.size_bytes
      ? `size ${size} bytes, expected ${release.size_bytes}`
      : `SHA-256 ${digest}, expected ${release.checksum_sha256}`;
    const retry = resumed ? 0 : undefined;
    throw new UpdateClientError("integrity", `download rejected: ${what}`, undefined, retry);
  }
  await fileStep(() => Deno.rename(partPath, target), target);
  await Deno.remove(statePath).catch(() => {});
}

/** The saved state when `.part` + `.part.json` belong to this release; otherwise clears them. */
async function readPartState(
  partPath: string,
  statePath: string,
  release: Release,
): Promise<PartState | null> {
  try {
    const state = JSON.parse(await Deno.readTextFile(statePath)) as PartState;
    const { size } = await Deno.stat(partPath);
    if (
      state.release_id === release.id && state.checksum_sha256 === release.checksum_sha256 &&
      state.size_bytes === release.size_bytes && size <= release.size_bytes
    ) return state;
  } catch { /* missing or unreadable: start fresh */ }
  await discard(partPath, statePath);
  return null;
}

async function hashFile(path: string, hash: Hash): Promise<number> {
  const file = await openFile(path, { read: true });
  let size = 0;
  for await (const chunk of file.readable) {
    hash.update(chunk);
    size += chunk.byteLength;
  }
  return size;
}

async function discard(partPath: string, statePath: string): Promise<void> {
  await Deno.remove(partPath).catch(() => {});
  await Deno.remove(statePath).catch(() => {});
}

function contentRangeStart(header: string | null): number | null {
  const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header ?? "");
  return m ? Number(m[1]) : null;
}

// ---------------------------------------------------------------- HTTP

/** GETs `path` with the key; returns a 2xx response or throws an UpdateClientError. */
async function send(
  options: ClientOptions,
  path: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<Response> {
  const url = new URL(path, options.baseUrl);
  const doFetch = options.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(url, {
      headers: { ...headers, authorization: `Bearer ${options.apiKey}` },
      signal: signal ?? AbortSignal.timeout(options.idleTimeoutMs ?? 30_000),
    });
  } catch (error) {
    throw asClientError(error);
  }
  if (res.ok) return res;
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
async function withRetries<T>(options: ClientOptions, attempt: () => Promise<T>): Promise<T> {
  const retries = options.retries ?? 3;
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  for (let i = 0;; i++) {
    try {
      return await attempt();
    } catch (error) {
      const failure = asClientError(error);
      if (failure.retryAfterMs === undefined || i >= retries) throw failure;
      await sleep(failure.retryAfterMs);
    }
  }
}

/** Maps fetch, stream and file errors onto the failure kinds. */
function asClientError(error: unknown): UpdateClientError {
  if (error instanceof UpdateClientError) return error;
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
    return new UpdateClientError("file", String((error as Error).message));
  }
  const message = error instanceof Error ? error.message : String(error);
  // fetch reports refused, reset and cut connections as TypeError; the watchdog aborts.
  const timedOut = error instanceof DOMException &&
    (error.name === "TimeoutError" || error.name === "AbortError");
  if (error instanceof TypeError || timedOut || error instanceof Deno.errors.ConnectionReset) {
    return new UpdateClientError(
      "network",
      `network failure: ${timedOut ? "timed out" : message}`,
      undefined,
      1000,
    );
  }
  return new UpdateClientError("server", message);
}

/** An abort signal that fires when `kick()` has not been called for `ms`. */
function idleWatchdog(ms: number) {
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

// ---------------------------------------------------------------- files

async function fileStep<T>(step: () => Promise<T>, path: string): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw new UpdateClientError("file", `cannot use ${path}: ${(error as Error).message}`);
  }
}

function openFile(path: string, mode: Deno.OpenOptions): Promise<Deno.FsFile> {
  return fileStep(() => Deno.open(path, mode), path);
}

async function writeJson(path: string, value: unknown): Promise<void> {
  await fileStep(() => Deno.writeTextFile(path, JSON.stringify(value)), path);
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array, path: string): Promise<void> {
  for (let written = 0; written < bytes.byteLength;) {
    written += await fileStep(() => file.write(bytes.subarray(written)), path);
  }
}
