/**
 * The SHA-512 of releases stored before uploads computed it, once, in the
 * background: one instance at a time (a lease in KV, renewed while it runs),
 * each artifact read once and its SHA-256 checked on the way, until every
 * release has it; then a mark in KV ends it for good. Until a release has
 * its SHA-512 the electron feed answers a clear 503 (src/client_api/feeds.ts).
 */
import { createHash } from "node:crypto";
import { JOB_LEASE_MS, scheduleJob } from "../lib/background_job.ts";
import type { ArtifactStore } from "../storage/types.ts";
import { type ArtifactWorkOptions, readRecordedArtifact } from "../storage/artifact_work.ts";
import {
  isSha512BackfillDone,
  listReleasesWithoutSha512,
  markSha512BackfillDone,
} from "./backfill_records.ts";
import { claimLease, releaseLease } from "../kv/leases.ts";
import { setReleaseSha512 } from "../releases/releases.ts";
import type { Release } from "../releases/types.ts";

/** How often an instance that found the lease taken (or failed) looks again. */
const RETRY_MS = 60_000;
const PAGE = 100;

export interface BackfillResult {
  /** "done": every release has it now; "busy": another instance holds the lease. */
  outcome: "done" | "busy" | "incomplete";
  filled: number;
  skipped: number;
}

/** One run: fills what it can while it holds the lease. */
export async function runSha512Backfill(
  { store, artifacts, report }: ArtifactWorkOptions,
  holder: string = crypto.randomUUID(),
): Promise<BackfillResult> {
  const result: BackfillResult = { outcome: "done", filled: 0, skipped: 0 };
  if (await isSha512BackfillDone(store)) return result;
  const lease = { holder, ttlMs: JOB_LEASE_MS };
  if (!await claimLease(store, "sha512_backfill", lease)) return { ...result, outcome: "busy" };
  try {
    let cursor = "";
    do {
      const page = await listReleasesWithoutSha512(store, { cursor, limit: PAGE });
      for (const release of page.releases) {
        if (!await claimLease(store, "sha512_backfill", lease)) {
          return { ...result, outcome: "busy" };
        }
        const sha512 = await artifactSha512(artifacts, release);
        if (sha512 === null) {
          result.skipped++;
          report("warn", "sha512 backfill: artifact missing or not as recorded", {
            release_id: release.id,
          });
        } else if (await setReleaseSha512(store, release, sha512)) {
          result.filled++;
        }
      }
      cursor = page.cursor;
    } while (cursor !== "");
    if (result.skipped > 0) return { ...result, outcome: "incomplete" };
    await markSha512BackfillDone(store);
    if (result.filled > 0) report("info", "sha512 backfill done", { filled: result.filled });
    return result;
  } finally {
    await releaseLease(store, "sha512_backfill", { holder }).catch(() => {});
  }
}

/** The SHA-512 (base64) of the release's artifact, or null when it is missing or not its SHA-256. */
function artifactSha512(artifacts: ArtifactStore, release: Release): Promise<string | null> {
  return readRecordedArtifact(artifacts, release, async (chunks) => {
    const sha512 = createHash("sha512");
    for await (const chunk of chunks) sha512.update(chunk);
    return sha512.digest("base64");
  });
}

/**
 * Runs the backfill in the background until it is done: at once, then every
 * RETRY_MS while another instance holds the lease or a run failed. Returns
 * the function that stops it.
 */
export function scheduleSha512Backfill(options: ArtifactWorkOptions): () => void {
  return scheduleJob(async () => {
    let outcome: BackfillResult["outcome"] = "incomplete";
    try {
      outcome = (await runSha512Backfill(options)).outcome;
    } catch (error) {
      options.report("warn", "sha512 backfill failed", { error: String(error) });
    }
    return outcome === "done" ? null : RETRY_MS;
  });
}
