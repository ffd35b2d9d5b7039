/**
 * The reference client's `publish` (docs/publishing.md): one release upload
 * to the publishing API with a publish token. The file is streamed (never
 * held in memory): read once for its SHA-256, then sent as the `file` part of
 * a multipart body built on the fly, with the SHA-256 for the service to
 * check. Retries only where that is safe: after a 429 (nothing was done), a
 * 503 (the storage did not answer, nothing was stored), and a dropped
 * connection only once a look at the project's releases shows that the
 * upload was not recorded (else that release is the answer).
 */
import { createHash } from "node:crypto";
import { basename } from "node:path";
import {
  type ClientOptions,
  installIdHeader,
  UpdateClientError,
  USER_AGENT,
  withRetries,
} from "./http.ts";

export interface PublishOptions extends Omit<ClientOptions, "apiKey"> {
  /** The publish token (`udp_…`). */
  token: string;
  project: string;
  version: string;
  /** Path of the artifact. */
  file: string;
  build?: string;
  releaseNotes?: string;
  draft?: boolean;
  notLatest?: boolean;
  /**
   * A staged rollout (docs/rollouts.md): the release reaches `percentage` %
   * of clients (optionally more by `schedule`, steps `TIME=PERCENT` separated
   * by commas; API keys with the rollout tag `testerTag` always) while the others keep the latest.
   */
  rollout?: { percentage: number; schedule?: string; testerTag?: string };
  /** The Tauri updater signature (the .sig file's text) and Sparkle's EdDSA signature, if any. */
  tauriSignature?: string;
  sparkleSignature?: string;
}

/** The service's answer: the project and the release with its state and whether it is latest. */
export interface Published {
  project: { id: number; name: string; slug: string; state: string };
  release: {
    id: number;
    version: string;
    checksum_sha256: string;
    size_bytes: number;
    state: string;
    is_latest: boolean;
    [field: string]: unknown;
  };
  /** Only when a rollout was asked for and did not start: why (the release is published). */
  rollout_error?: string;
}

export async function publishRelease(options: PublishOptions): Promise<Published> {
  const { size, sha256 } = await fileFacts(options.file);
  const releasesPath = `/publish/v1/projects/${encodeURIComponent(options.project)}/releases`;
  return await withRetries({ ...options, apiKey: options.token }, async () => {
    try {
      return await uploadOnce(options, { size, sha256, path: releasesPath });
    } catch (error) {
      if (!(error instanceof UpdateClientError) || error.kind !== "network") throw error;
      // Dropped: maybe after the service recorded it. Retry only if it did not.
      const recorded = await findRecorded(options, { sha256, path: releasesPath });
      if (recorded !== null) return recorded;
      throw error;
    }
  });
}

async function fileFacts(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  let size = 0;
  try {
    using file = await Deno.open(path, { read: true });
    for await (const chunk of file.readable) {
      hash.update(chunk);
      size += chunk.byteLength;
    }
  } catch (error) {
    throw new UpdateClientError("file", `cannot read ${path}: ${(error as Error).message}`);
  }
  if (size === 0) throw new UpdateClientError("file", `${path} is empty`);
  return { size, sha256: hash.digest("hex") };
}

const encoder = new TextEncoder();

/** The upload's rollout fields (none without a rollout). */
function rolloutFields(rollout: PublishOptions["rollout"]): Array<[string, string]> {
  if (rollout === undefined) return [];
  return [
    ["rollout_percentage", String(rollout.percentage)],
    ...(rollout.schedule ? [["rollout_schedule", rollout.schedule] as [string, string]] : []),
    ...(rollout.testerTag ? [["rollout_tester_tag", rollout.testerTag] as [string, string]] : []),
  ];
}

async function uploadOnce(
  options: PublishOptions,
  { size, sha256, path }: { size: number; sha256: string; path: string },
): Promise<Published> {
  const boundary = `uds-publish-${crypto.randomUUID()}`;
  const fields: Array<[string, string]> = [
    ["version", options.version],
    ["sha256", sha256],
    ...(options.build ? [["build", options.build] as [string, string]] : []),
    ...(options.releaseNotes ? [["release_notes", options.releaseNotes] as [string, string]] : []),
    ...(options.draft ? [["draft", "true"] as [string, string]] : []),
    ...(options.notLatest ? [["not_latest", "true"] as [string, string]] : []),
    ...rolloutFields(options.rollout),
    ...(options.tauriSignature
      ? [["tauri_signature", options.tauriSignature] as [string, string]]
      : []),
    ...(options.sparkleSignature
      ? [["sparkle_signature", options.sparkleSignature] as [string, string]]
      : []),
  ];
  const filename = basename(options.file).replace(/["\\\r\n]/g, "_");
  const head = encoder.encode(
    fields.map(([name, value]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
    ).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(options.file, { read: true });
  } catch (error) {
    throw new UpdateClientError("file", `cannot read ${options.file}: ${(error as Error).message}`);
  }
  const body = ReadableStream.from((async function* () {
    yield head;
    yield* file.readable;
    yield tail;
  })());
  const url = new URL(path, options.baseUrl);
  let res: Response;
  try {
    res = await (options.fetch ?? fetch)(url, {
      method: "POST",
      body,
      headers: {
        ...installIdHeader(options),
        "user-agent": USER_AGENT,
        authorization: `Bearer ${options.token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(head.byteLength + size + tail.byteLength),
      },
    });
  } catch (error) {
    throw new UpdateClientError(
      "network",
      `network failure reaching ${url.host}${url.pathname}: ${(error as Error).message}`,
      undefined,
      1000,
    );
  } finally {
    try {
      file.close();
    } catch { /* closed by the stream */ }
  }
  if (res.status === 201) return await res.json() as Published;
  throw await failureOf(res, url);
}

/** A release of the project with this version and SHA-256 among the newest, or null. */
async function findRecorded(
  options: PublishOptions,
  { sha256, path }: { sha256: string; path: string },
): Promise<Published | null> {
  const url = new URL(`${path}?limit=20`, options.baseUrl);
  let res: Response;
  try {
    res = await (options.fetch ?? fetch)(url, {
      headers: {
        ...installIdHeader(options),
        "user-agent": USER_AGENT,
        authorization: `Bearer ${options.token}`,
      },
    });
  } catch {
    return null; // still unreachable: the retry finds out again
  }
  if (!res.ok) throw await failureOf(res, url);
  const page = await res.json() as {
    project: Published["project"];
    releases: Published["release"][];
  };
  const release = page.releases.find((r) =>
    r.version === options.version && r.checksum_sha256 === sha256
  );
  return release === undefined ? null : { project: page.project, release };
}

/** The failure an answer means, with the service's `{ "error": … }` text. */
async function failureOf(res: Response, url: URL): Promise<UpdateClientError> {
  let text = res.statusText || "error";
  try {
    const body = await res.json();
    if (typeof body?.error === "string") text = body.error;
  } catch { /* not JSON */ }
  const message = `${res.status} ${text} (${url.pathname})`;
  if (res.status === 401 || res.status === 403) {
    return new UpdateClientError("auth", message, res.status);
  }
  if (res.status === 404) return new UpdateClientError("not_found", message, res.status);
  if (res.status === 422) return new UpdateClientError("integrity", message, res.status);
  if (res.status === 429) {
    const seconds = Number(res.headers.get("retry-after") ?? "1");
    const wait = Number.isFinite(seconds) && seconds <= (60) ? seconds * 1000 : undefined;
    return new UpdateClientError("rate_limited", message, 429, wait);
  }
  // The storage did not answer: nothing was stored, so trying again is safe.
  if (res.status === 503) return new UpdateClientError("network", message, 503, 2000);
  if (res.status >= 400 && res.status < 500 || res.status === 507) {
    return new UpdateClientError("refused", message, res.status);
  }
  return new UpdateClientError("server", message, res.status);
}
