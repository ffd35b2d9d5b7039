/**
 * The reference client's download: into `<target>.part`, with
 * `<target>.part.json` remembering which release and which ETag the part
 * belongs to. A later call resumes with `Range` + `If-Range` and accepts a
 * `200` instead (restarting from zero). Size and SHA-256 are checked while
 * streaming; the file is renamed onto `target` only when both match.
 */
import { createHash, type Hash } from "node:crypto";
import {
  asClientError,
  type ClientOptions,
  idleWatchdog,
  type Release,
  send,
  UpdateClientError,
  withRetries,
} from "./http.ts";

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
    const res = await send(options, release.download_url, { headers, signal: watchdog.signal });
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
    throw asClientError(error, new URL(release.download_url, options.baseUrl));
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

/** Feeds the file at `path` to `hash`; its size in bytes. */
export async function hashFile(path: string, hash: Hash): Promise<number> {
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

// Files: every failure becomes an UpdateClientError of kind "file".

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

/** Writes all of `bytes` to `file` (at `path`, named in its error). */
export async function writeAll(
  file: Deno.FsFile,
  bytes: Uint8Array,
  path: string,
): Promise<void> {
  for (let written = 0; written < bytes.byteLength;) {
    written += await fileStep(() => file.write(bytes.subarray(written)), path);
  }
}
