/**
 * Takes install reports off the request path (docs/reports.md "Storage and
 * bounds"): a request only puts its report into this instance's pending map
 * (the same report of an install, version and kind is kept once); in the
 * background the map is written as one batch (reports.ts), at most
 * one batch a `batchMs`; a batch that cannot be written is tried again with
 * the next (for up to a minute). Versions are resolved to releases in the batch (one
 * list of the project's releases per batch); a report of a version the
 * project does not have is dropped. Past `maxPending` reports waiting, a new
 * one goes straight into the sketch of its (version, kind, day); past
 * `maxPending` of those groups too, it is dropped.
 *
 * Only trusted reports are counted (docs/reports.md "What the gates
 * trust"): the install's adoption marker (adoption.ts) must list the
 * report's release as offered to it. The batch first lets this instance's
 * adoption recorder write what it holds (`settle`), then reads the markers
 * of its installs at once. A report not trusted yet waits for one more
 * batch while it is younger than TRUST_WAIT_MS and there is room (the answer
 * may have come from another instance whose sightings are still on their
 * way); after that it goes into the sketch of its (release, kind, day),
 * shown apart and never read by the gates.
 */
import { createBatchRunner } from "../lib/batch_runner.ts";
import { addToSketch, createSketch, mergeSketch } from "../lib/hyperloglog.ts";
import {
  adoptionClientHash,
  adoptionDay,
  type AdoptionMarker,
  offeredReleases,
} from "./adoption.ts";
import { getManyEntries } from "../kv/get_many.ts";
import { adoptionClientKey } from "../kv/keys.ts";
import { isNewerRelease, listReleasesByProject } from "../releases/releases.ts";
import {
  recordReports,
  type ReportItem,
  type ReportKind,
  type ReportSketchPart,
  reportSketchPartOf,
} from "./reports.ts";
import type { Release } from "../projects/types.ts";
import type { Store } from "../kv/store.ts";

/** A report as it arrives (already checked by the route). */
export interface IncomingReport {
  projectId: number;
  installId: string;
  /** The client address it came from (the per-address cap of new markers). */
  address: string;
  /** The version the install runs now (`installed`), or the version that failed. */
  version: string;
  kind: Exclude<ReportKind, "returned">;
  /** `installed`: the version it ran before (a newer one: the install came back). */
  previousVersion?: string;
  reason?: string;
}

export interface ReportRecorder {
  /** Queues `report`; returns at once. */
  record(report: IncomingReport): void;
  /** Resolves once every report queued so far is written (tests, shutdown). */
  flush(): Promise<void>;
}

export interface ReportRecorderOptions {
  /** Report markers per client address and UTC day counted exactly; the rest in sketches (default 10,000). */
  newIdsPerDay?: number;
  /**
   * Called before each batch: this instance's adoption recorder writes the
   * sightings it holds, so a report of an answer just given is trusted.
   */
  settle?: () => Promise<void>;
  /** Reports waiting for the writer (default 10,000); past it, a new one is sketched. */
  maxPending?: number;
  /** The least time between the starts of two batches, in ms (default 1,000). */
  batchMs?: number;
  /** The clock, in ms (when a report arrived: its hour and day). */
  now?: () => number;
  onKvError?: () => void;
}

interface Pending extends IncomingReport {
  at: number;
  /** Batches that found it not trusted yet (0 or 1). */
  untrusted: number;
}

/** A report that could not be written is tried again in later batches for this long. */
const REQUEUE_MS = 60_000;
/** A report not trusted yet is looked at once more while younger than this, in ms. */
const TRUST_WAIT_MS = 5_000;

/** One install's report of a version and kind: the pending map keeps one. */
function nameOf(report: IncomingReport): string {
  return `${report.projectId} ${report.version} ${report.kind} ${report.installId}`;
}

interface PendingSketch {
  projectId: number;
  version: string;
  kind: ReportKind;
  at: number;
  sketch: Uint8Array;
}

export function createReportRecorder(
  store: Store,
  options: ReportRecorderOptions = {},
): ReportRecorder {
  const {
    newIdsPerDay = 10_000,
    maxPending = 10_000,
    batchMs = 1_000,
    now = Date.now,
    onKvError = () => {},
    settle = () => Promise.resolve(),
  } = options;
  let pending = new Map<string, Pending>();
  let overflow = new Map<string, PendingSketch>();

  const runner = createBatchRunner(async () => {
    const batch = [...pending.values()];
    const sketches = [...overflow.values()];
    pending = new Map();
    overflow = new Map();
    await settle().catch(() => {}); // its own errors are its recorder's to report
    /** Takes `report` into the next batch; false when there is no room. */
    const requeue = (report: Pending): boolean => {
      const name = nameOf(report);
      if (pending.has(name)) return true;
      if (pending.size >= maxPending) return false;
      pending.set(name, report);
      return true;
    };
    await writeBatch(store, { batch, sketches, newIdsPerDay, nowMs: now(), requeue }).catch(
      (error) => {
        onKvError();
        console.error("could not record install reports (they wait for the next batch):", error);
        // Kept for the next batch while there is room: a report already counted is skipped then.
        for (const report of batch) if (report.at > now() - REQUEUE_MS) requeue(report);
      },
    );
  }, { batchMs, pending: () => pending.size > 0 || overflow.size > 0 });

  return {
    record(report) {
      const at = now();
      const name = nameOf(report);
      if (pending.size < maxPending || pending.has(name)) {
        pending.set(name, { ...report, at, untrusted: 0 });
      } else {
        const day = adoptionDay(at);
        const group = `${report.projectId} ${report.version} ${report.kind} ${day}`;
        let part = overflow.get(group);
        if (part === undefined) {
          if (overflow.size >= maxPending) return;
          part = { ...report, at, sketch: createSketch() };
          overflow.set(group, part);
        }
        addToSketch(part.sketch, adoptionClientHash(`install:${report.installId}`));
      }
      runner.request();
    },
    flush: runner.flush,
  };
}

/**
 * Resolves the batch's versions, keeps the trusted reports (`requeue`s those
 * that may be trusted a moment later, sketches the others) and writes them.
 */
async function writeBatch(
  store: Store,
  { batch, sketches, newIdsPerDay, nowMs, requeue }: {
    batch: Pending[];
    sketches: PendingSketch[];
    newIdsPerDay: number;
    nowMs: number;
    requeue: (report: Pending) => boolean;
  },
): Promise<void> {
  const releases = new Map<number, Map<string, Release>>();
  const releaseOf = async (projectId: number, version: string | undefined) => {
    if (version === undefined) return undefined;
    let versions = releases.get(projectId);
    if (versions === undefined) {
      versions = new Map();
      // Newest first: a version reused by an archived release names the newest.
      for (const release of (await listReleasesByProject(store, projectId)).reverse()) {
        versions.set(release.version, release);
      }
      releases.set(projectId, versions);
    }
    return versions.get(version);
  };
  const resolved: Array<{ report: Pending; client: string; items: ReportItem[] }> = [];
  for (const report of batch) {
    const release = await releaseOf(report.projectId, report.version);
    if (release === undefined) continue;
    const client = adoptionClientHash(`install:${report.installId}`);
    const item = { releaseId: release.id, address: report.address, client, at: report.at };
    const items: ReportItem[] = [{ ...item, kind: report.kind, reason: report.reason }];
    const previous = await releaseOf(report.projectId, report.previousVersion);
    if (
      report.kind === "installed" && previous !== undefined && isNewerRelease(previous, release)
    ) {
      items.push({ ...item, kind: "returned" });
    }
    resolved.push({ report, client, items });
  }
  // What the gates trust: the install's marker lists the release as offered to it.
  const markers = await getManyEntries<AdoptionMarker>(
    store.kv,
    resolved.map(({ report, client }) => adoptionClientKey(report.projectId, client)),
  );
  const overflow = new Map<string, ReportSketchPart>();
  const items: ReportItem[] = [];
  for (const [i, { report, items: reported }] of resolved.entries()) {
    const marker = markers[i].value;
    const offered = marker === null ? [] : offeredReleases(marker);
    const untrusted = reported.filter((item) => !offered.includes(item.releaseId));
    items.push(...reported.filter((item) => offered.includes(item.releaseId)));
    if (untrusted.length === 0) continue;
    if (
      report.untrusted === 0 && nowMs - report.at < TRUST_WAIT_MS &&
      requeue({ ...report, untrusted: 1 })
    ) {
      continue;
    }
    for (const item of untrusted) {
      addToSketch(reportSketchPartOf(overflow, item).sketch, item.client);
    }
  }
  for (const part of sketches) {
    const release = await releaseOf(part.projectId, part.version);
    if (release === undefined) continue;
    const into = reportSketchPartOf(overflow, { releaseId: release.id, ...part });
    mergeSketch(into.sketch, part.sketch);
  }
  await recordReports(store, { items, overflow, newIdsPerDay });
}
