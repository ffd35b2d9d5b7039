/**
 * The reference client's update download from an installed file: first the
 * service's own patch from the installed version (patch.ts, docs/client-api.md
 * "Server-made patches"), else the differential download (docs/client-api.md,
 * "Differential downloads"): the block maps of the installed and the new
 * release (the electron feed's `.blockmap` URLs, docs/feeds.md), the new
 * release's blocks the installed file already has copied from it, the rest
 * fetched with multi-range requests of the release's download, then size and
 * SHA-256 checked. Any failure (no block map yet, a server without multi-range
 * answers, an installed file that is not what its block map says) falls back
 * to the full download, which verifies the file too.
 */
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import {
  type DownloadOptions,
  downloadRelease,
  type DownloadResult,
  writeAll,
} from "./download.ts";
import { type Release, send, UpdateClientError } from "./http.ts";
import { applyServerPatch } from "./patch.ts";

export interface DifferentialOptions extends DownloadOptions {
  /** The installed release's file. */
  installedFile: string;
  /** Its version, and the project's slug: where the installed release's block map is found. */
  installedVersion: string;
  project: string;
  /** Whether to ask for the service's patch first (default true). */
  patches?: boolean;
}

export interface DifferentialResult extends DownloadResult {
  /** Whether a differential path (patch or block map) succeeded; false after the full download. */
  differential: boolean;
  /** Which path made the file. */
  method: "patch" | "block map" | "full";
  /** Why the paths before it failed, when they did ("; " between them). */
  fallback?: string;
}

interface BlockMapFile {
  checksums: string[];
  sizes: number[];
}

/** Ranges per request (electron-updater sends up to 1,000; the service answers up to 2,000). */
const RANGES_PER_REQUEST = 1000;

/** Downloads `release` differentially from `installedFile`, else whole. */
export async function downloadDifferentially(
  options: DifferentialOptions,
): Promise<DifferentialResult> {
  const reasons: string[] = [];
  const reason = (error: unknown) =>
    reasons.push(error instanceof Error ? error.message : String(error));
  if (options.patches !== false) {
    try {
      const receivedBytes = await applyServerPatch(options);
      return { receivedBytes, resumed: false, differential: true, method: "patch" };
    } catch (error) {
      reason(error);
    }
  }
  try {
    const receivedBytes = await assemble(options);
    return {
      receivedBytes,
      resumed: false,
      differential: true,
      method: "block map",
      ...(reasons.length > 0 ? { fallback: reasons.join("; ") } : {}),
    };
  } catch (error) {
    await Deno.remove(`${options.target}.delta`).catch(() => {});
    reason(error);
    const full = await downloadRelease(options);
    return { ...full, differential: false, method: "full", fallback: reasons.join("; ") };
  }
}

/** One step of the plan: copy `length` bytes from the installed file, or download them. */
interface Step {
  copyFrom: number | null;
  start: number;
  length: number;
}

async function blockMap(options: DifferentialOptions, path: string): Promise<BlockMapFile> {
  const res = await send(options, path);
  const map = JSON.parse(
    new TextDecoder().decode(gunzipSync(new Uint8Array(await res.arrayBuffer()))),
  );
  const file = map?.files?.[0];
  if (map?.version !== "2" || !Array.isArray(file?.checksums) || !Array.isArray(file?.sizes)) {
    throw new Error("not a block map");
  }
  return file;
}

/** The steps that make the new file: blocks the installed file has are copied, the rest fetched. */
function plan(installed: BlockMapFile, next: BlockMapFile, size: number): Step[] {
  const have = new Map<string, number>();
  let offset = 0;
  installed.checksums.forEach((checksum, i) => {
    const key = `${checksum}:${installed.sizes[i]}`;
    if (!have.has(key)) have.set(key, offset);
    offset += installed.sizes[i];
  });
  const steps: Step[] = [];
  let at = 0;
  next.checksums.forEach((checksum, i) => {
    const length = next.sizes[i];
    const copyFrom = have.get(`${checksum}:${length}`) ?? null;
    const last = steps.at(-1);
    // Adjacent steps of one kind (and contiguous in the installed file) become one.
    if (
      last !== undefined && (last.copyFrom === null) === (copyFrom === null) &&
      (copyFrom === null || last.copyFrom! + last.length === copyFrom)
    ) {
      last.length += length;
    } else {
      steps.push({ copyFrom, start: at, length });
    }
    at += length;
  });
  if (at !== size) throw new Error("the new block map does not add up to the release's size");
  return steps;
}

async function assemble(options: DifferentialOptions): Promise<number> {
  const { release, target } = options;
  const slug = encodeURIComponent(options.project);
  const installedMap = await blockMap(
    options,
    `/feeds/electron/${slug}/files/${
      encodeURIComponent(options.installedVersion)
    }/installed.blockmap`,
  );
  const nextMap = await blockMap(
    options,
    `/feeds/files/${release.id}/${encodeURIComponent(release.filename)}.blockmap`,
  );
  const steps = plan(installedMap, nextMap, release.size_bytes);
  const downloads = steps.filter((step) => step.copyFrom === null);
  const parts = new Map<number, Uint8Array>(); // by start
  let received = 0;
  for (let i = 0; i < downloads.length; i += RANGES_PER_REQUEST) {
    const batch = downloads.slice(i, i + RANGES_PER_REQUEST);
    for (const [start, bytes] of await fetchRanges(options, release, batch)) {
      parts.set(start, bytes);
      received += bytes.byteLength;
    }
  }
  const installed = await Deno.open(options.installedFile, { read: true });
  const out = await Deno.open(`${target}.delta`, { write: true, create: true, truncate: true });
  const hash = createHash("sha256");
  try {
    for (const step of steps) {
      let bytes: Uint8Array;
      if (step.copyFrom === null) bytes = parts.get(step.start)!;
      else {
        bytes = new Uint8Array(step.length);
        await installed.seek(step.copyFrom, Deno.SeekMode.Start);
        for (let got = 0; got < bytes.byteLength;) {
          const n = await installed.read(bytes.subarray(got));
          if (n === null) throw new Error("the installed file is shorter than its block map");
          got += n;
        }
      }
      hash.update(bytes);
      await writeAll(out, bytes, `${target}.delta`);
    }
  } finally {
    installed.close();
    out.close();
  }
  if (hash.digest("hex") !== release.checksum_sha256.toLowerCase()) {
    throw new Error("SHA-256 mismatch after the differential download");
  }
  await Deno.rename(`${target}.delta`, target);
  return received;
}

/** The bytes of `steps` (to download), by their start: one request, multipart when several. */
async function fetchRanges(
  options: DifferentialOptions,
  release: Release,
  steps: Step[],
): Promise<Array<[number, Uint8Array]>> {
  const range = "bytes=" +
    steps.map((step) => `${step.start}-${step.start + step.length - 1}`).join(",");
  const res = await send(options, release.download_url, { headers: { range } });
  const body = new Uint8Array(await res.arrayBuffer());
  if (res.status !== 206) throw new UpdateClientError("server", `${res.status} to ranges`);
  if (steps.length === 1) {
    if (body.byteLength !== steps[0].length) throw new Error("a range of the wrong length");
    return [[steps[0].start, body]];
  }
  const boundary = /boundary=([^\s;]+)/.exec(res.headers.get("content-type") ?? "")?.[1];
  if (!/^multipart\/byteranges/i.test(res.headers.get("content-type") ?? "") || !boundary) {
    throw new Error("the server did not answer several ranges with multipart/byteranges");
  }
  return splitParts(body, boundary, steps);
}

/** The parts of a multipart/byteranges body, checked against the ranges asked, in order. */
function splitParts(
  body: Uint8Array,
  boundary: string,
  steps: Step[],
): Array<[number, Uint8Array]> {
  const delimiter = new TextEncoder().encode(`--${boundary}`);
  const parts: Array<[number, Uint8Array]> = [];
  let at = 0;
  for (const step of steps) {
    const found = indexOf(body, delimiter, at);
    if (found === -1) throw new Error("a part is missing");
    const headersEnd = indexOf(body, CRLF_CRLF, found);
    if (headersEnd === -1) throw new Error("a part's headers do not end");
    const headers = new TextDecoder().decode(body.subarray(found, headersEnd));
    const range = /content-range: bytes (\d+)-(\d+)\//i.exec(headers);
    if (range === null || Number(range[1]) !== step.start) throw new Error("parts out of order");
    const length = Number(range[2]) - Number(range[1]) + 1;
    const start = headersEnd + CRLF_CRLF.byteLength;
    if (length !== step.length || start + length > body.byteLength) {
      throw new Error("a part of the wrong length");
    }
    parts.push([step.start, body.slice(start, start + length)]);
    at = start + length;
  }
  return parts;
}

const CRLF_CRLF = new Uint8Array([13, 10, 13, 10]);

/** Where `needle` first occurs in `haystack` from `from`, or -1. */
function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (
    let i = haystack.indexOf(needle[0], from);
    i !== -1;
    i = haystack.indexOf(needle[0], i + 1)
  ) {
    if (i + needle.byteLength > haystack.byteLength) return -1;
    for (let j = 1; j < needle.byteLength; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
