/**
 * Artifact downloads with single byte ranges (RFC 9110 section 14), so that
 * clients can resume: `ETag` (the artifact's SHA-256, strong) and
 * `Accept-Ranges: bytes` on every answer, `Range` honoured when `If-Range` is
 * absent or names the current ETag, `206` with `Content-Range`, `416` for a
 * start beyond the end. Several ranges get a `206` of `multipart/byteranges`
 * (byte_ranges.ts), within its bounds; malformed `Range` headers are ignored
 * (a full `200`), as RFC 9110 allows. The file is streamed from its offset in
 * large chunks and never read whole, from whichever backend holds it.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import {
  type ArtifactStore,
  type OpenedArtifact,
  StorageUnavailableError,
} from "../storage/mod.ts";
import {
  contentDisposition,
  DOWNLOAD_CONTENT_SECURITY_POLICY,
  downloadContentType,
} from "../http/content_disposition.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import type { Release } from "../releases/types.ts";
import type { DownloadMode } from "../lib/config.ts";
import {
  type ByteRange,
  multipartByteranges,
  parseRangeSet,
  parseRangeSpec,
  rangeSpecs,
} from "./byte_ranges.ts";

/**
 * Reads a `Range` header for a file of `size` bytes: the one range it asks
 * for (clipped to the file), `"unsatisfiable"` when it starts at or beyond the
 * end (or is an empty suffix), or null when it is absent, malformed, of another
 * unit or asks for more than one range: those are ignored and the whole file
 * is sent.
 */
export function parseRange(
  header: string | null | undefined,
  size: number,
): ByteRange | "unsatisfiable" | null {
  const specs = rangeSpecs(header);
  // More than one range is not served here (parseRangeSet).
  if (specs === null || specs.length !== 1) return null;
  const range = parseRangeSpec(specs[0], size);
  return range === "malformed" ? null : range ?? "unsatisfiable";
}

/** The strong ETag of an artifact: its SHA-256 hex, quoted. */
export function artifactEtag(checksumSha256: string): string {
  return `"${checksumSha256.toLowerCase()}"`;
}

/**
 * Whether a `Range` may be honoured under `If-Range`: when there is none, or
 * it is exactly the current strong ETag: ours (the SHA-256) or the store's own
 * for the same bytes (s3: what a client that followed a redirect was given).
 * A date, a weak or another ETag means the client's part may be stale, so the
 * whole file is sent.
 */
export function ifRangeAllows(
  ifRange: string | null | undefined,
  etag: string,
  storeEtag?: string,
): boolean {
  if (ifRange === null || ifRange === undefined) return true;
  return ifRange.trim() === etag || (storeEtag !== undefined && ifRange.trim() === storeEtag);
}

/** How the bytes reach the client once every check has passed (APP_DOWNLOAD_MODE). */
export interface Delivery {
  mode: DownloadMode;
  /** redirect: how long the presigned URL stays valid. */
  urlTtlSeconds: number;
  /** x-accel: the nginx `internal` location holding the artifact files. */
  xAccelPrefix: string;
  /**
   * x-accel: what nginx sends in `X-Accel-Secret`. A request without it did
   * not come through nginx (an instance reached directly), so nobody would
   * send the file for an `X-Accel-Redirect`: it is streamed instead.
   */
  xAccelSecret?: string;
}

/** The header nginx sets (`proxy_set_header X-Accel-Secret "…";`) on requests it passes on. */
export const X_ACCEL_SECRET_HEADER = "x-accel-secret";

/** Whether `request` came through the nginx that holds the x-accel secret (constant time). */
export function cameThroughProxy(request: Request, secret: string | undefined): boolean {
  const sent = request.headers.get(X_ACCEL_SECRET_HEADER);
  if (secret === undefined || sent === null) return false;
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(sent), digest(secret));
}

export interface ArtifactResponse {
  response: Response;
  /**
   * Whether this answer counts as one download once its last byte is sent: a
   * GET of the whole file, or the resumption of one (a range to the end of
   * the file, under an `If-Range` with its ETag). A download cut off counts
   * only when it is resumed to its end; probes like `bytes=0-0` never count.
   */
  countsAsDownload: boolean;
  /**
   * The bytes of the answer's body (0 for HEAD): what is streamed, or what
   * the store or nginx is asked to send for a hand-off (the parts' bytes).
   */
  bytes: number;
}

/** Where an artifact comes from and how it is sent. */
export interface ServeArtifactOptions {
  artifacts: ArtifactStore;
  delivery: Delivery;
}

/**
 * The answer to GET or HEAD of a release's artifact: `200` (whole file),
 * `206` (one range, GET only: HEAD ignores `Range`) or, by throwing, `404 release not found` (file missing)
 * and `416 range not satisfiable`. With `redirect` or `x-accel` delivery a GET
 * that passed all of that is handed on instead (see {@link handOff}); HEAD is
 * always answered here.
 */
export async function serveArtifact(
  release: Release,
  request: Request,
  options: ServeArtifactOptions,
): Promise<ArtifactResponse> {
  try {
    return await answerArtifact(release, request, options);
  } catch (error) {
    if (error instanceof StorageUnavailableError) {
      throw new ApiError(503, API_ERRORS.storageUnavailable, {
        "retry-after": String(STORAGE_RETRY_AFTER_SECONDS),
      });
    }
    throw error;
  }
}

/** What a client is told to wait after a 503 of storage that does not answer. */
const STORAGE_RETRY_AFTER_SECONDS = 10;

async function answerArtifact(
  release: Release,
  request: Request,
  { artifacts, delivery }: ServeArtifactOptions,
): Promise<ArtifactResponse> {
  const artifact = await artifacts.open(release.storage_key);
  if (artifact === null) throw new ApiError(404, API_ERRORS.releaseNotFound);
  const { size } = artifact;
  const etag = artifactEtag(release.checksum_sha256);

  // RFC 9110 section 14.2: Range is defined for GET only; HEAD describes the whole file.
  const ifRange = request.headers.get("if-range");
  const validated = ifRange !== null && ifRangeAllows(ifRange, etag, artifact.storeEtag);
  const rangeHeader = request.method === "GET" && (ifRange === null || validated)
    ? request.headers.get("range")
    : null;
  const rangeSet = parseRangeSet(rangeHeader, size);
  // Several ranges of which one is satisfiable get that one as a single range (as nginx does).
  const range = rangeSet === null
    ? parseRange(rangeHeader, size)
    : rangeSet === "unsatisfiable"
    ? rangeSet
    : rangeSet.length === 1
    ? rangeSet[0]
    : null;
  if (range === "unsatisfiable") {
    artifact.close();
    throw new ApiError(416, API_ERRORS.rangeNotSatisfiable, {
      "accept-ranges": "bytes",
      "content-range": `bytes */${size}`,
    });
  }

  if (Array.isArray(rangeSet) && rangeSet.length > 1) {
    const answer = await answerRangeSet(release, request, {
      artifact,
      ranges: rangeSet,
      delivery,
      artifacts,
      headers: artifactHeaders(release, etag),
    });
    // Past what the store allows one answer: the whole file, streamed (below).
    if (answer !== null) return answer;
  }

  const start = range?.start ?? 0;
  const length = range === null ? size : range.end - range.start + 1;
  const headers = artifactHeaders(release, etag);
  headers["content-length"] = String(length);
  if (range !== null) headers["content-range"] = `bytes ${range.start}-${range.end}/${size}`;
  const status = range === null ? 200 : 206;

  // Hono answers HEAD with the GET handler's headers and drops its body
  // without cancelling it: close the artifact here instead of leaking it.
  if (request.method === "HEAD") {
    artifact.close();
    return {
      response: new Response(null, { status, headers }),
      countsAsDownload: false,
      bytes: 0,
    };
  }
  // A download counts once, when the file's last byte is sent: the whole file
  // in one answer, or the part that completes a resumed download.
  const toTheEnd = start + length === size;
  const resumed = start > 0 && validated;
  const counts = toTheEnd && (start === 0 || resumed);
  // A Range refused by If-Range is served here: whoever the request is handed
  // to compares If-Range with its own ETag, not ours, or (radosgw) ignores it.
  const rangeRefused = range === null && request.headers.has("range");
  // x-accel needs nginx to send the file: a request that reached the instance directly is streamed.
  const direct = delivery.mode === "x-accel" &&
    !cameThroughProxy(request, delivery.xAccelSecret);
  if (delivery.mode !== "stream" && !rangeRefused && !direct) {
    artifact.close();
    const response = await handOff(release, headers, { artifacts, delivery });
    return { response, countsAsDownload: counts, bytes: length };
  }
  const body = await artifact.read(start, length);
  return {
    response: new Response(body, { status, headers }),
    countsAsDownload: counts,
    bytes: length,
  };
}

/**
 * The headers of every answer that sends the artifact's bytes or hands them
 * on: what they are, how to save them, the sandbox, the ETag and ranges.
 */
function artifactHeaders(release: Release, etag: string): Record<string, string> {
  return {
    "content-type": downloadContentType(release.content_type),
    "content-disposition": contentDisposition(release.filename),
    "content-security-policy": DOWNLOAD_CONTENT_SECURITY_POLICY,
    etag,
    "accept-ranges": "bytes",
  };
}

/**
 * A `206` of several ranges in `multipart/byteranges`, streamed from the
 * store in every mode but one: `x-accel` behind nginx hands it on, and nginx
 * answers the ranges itself (within its `max_ranges`, docs/operators.md). In
 * `redirect` mode it is streamed: a bucket answers one range per GET. Never
 * counts as a download. Null when the store would need more reads than it
 * allows one answer (src/storage/spans.ts): the caller sends the whole file.
 */
async function answerRangeSet(
  release: Release,
  request: Request,
  { artifact, ranges, delivery, artifacts, headers }: {
    artifact: OpenedArtifact;
    ranges: ByteRange[];
    delivery: Delivery;
    artifacts: ArtifactStore;
    /** The artifact's headers (`artifactHeaders`), completed here. */
    headers: Record<string, string>;
  },
): Promise<ArtifactResponse | null> {
  if (delivery.mode === "x-accel" && cameThroughProxy(request, delivery.xAccelSecret)) {
    artifact.close();
    return {
      response: await handOff(release, headers, { artifacts, delivery }),
      countsAsDownload: false,
      bytes: ranges.reduce((sum, range) => sum + range.end - range.start + 1, 0),
    };
  }
  const bytes = artifact.readSpans(
    ranges.map((range) => ({ start: range.start, length: range.end - range.start + 1 })),
  );
  if (bytes === null) return null;
  const multipart = multipartByteranges(ranges, bytes, {
    size: artifact.size,
    contentType: headers["content-type"],
  });
  headers["content-type"] = multipart.contentType;
  headers["content-length"] = String(multipart.contentLength);
  return {
    response: new Response(multipart.body, { status: 206, headers }),
    countsAsDownload: false,
    bytes: multipart.contentLength,
  };
}

/**
 * A GET that passed every check, handed to someone else to send: `redirect`
 * answers `302` to a presigned URL of the object (it carries the
 * Content-Disposition and Content-Type; the client repeats its Range there);
 * `x-accel` answers with an empty body and `X-Accel-Redirect`, and nginx
 * sends the file itself, honouring Range.
 */
async function handOff(
  release: Release,
  headers: Record<string, string>,
  { artifacts, delivery }: ServeArtifactOptions,
): Promise<Response> {
  if (delivery.mode === "redirect") {
    if (artifacts.presignGet === undefined) throw new Error("redirect downloads need the s3 store");
    const location = await artifacts.presignGet(release.storage_key, {
      contentDisposition: headers["content-disposition"],
      contentType: headers["content-type"],
      ttlSeconds: delivery.urlTtlSeconds,
    });
    return new Response(null, {
      status: 302,
      headers: { location, "cache-control": "private, no-store" },
    });
  }
  return new Response(null, {
    status: 200,
    headers: {
      "x-accel-redirect": `${delivery.xAccelPrefix}${release.storage_key}`,
      "content-type": headers["content-type"],
      "content-disposition": headers["content-disposition"],
      "content-security-policy": headers["content-security-policy"],
      // nginx replaces its own ETag with this one (see the location in docs/operators.md)
      // and adds Accept-Ranges itself.
      etag: headers.etag,
    },
  });
}
