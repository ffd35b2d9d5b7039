/**
 * Takes install reports off the request path (docs/reports.md "Storage and
 * bounds"): a request only puts its report into this instance's pending map
 * (the same report of an install, version and kind is kept once); in the
 * background the map is written as one batch (reports.ts), at most
 * one batch a `batchMs`, by the batching writer (src/kv/batch_writer.ts)
 * and its failure policy: a batch that could not be written is tried again a
 * `batchMs` later while its reports are younger than a minute and there is
 * room; the same report queued again meanwhile takes its place. Versions are
 * resolved to releases in the batch (one list of the project's releases per
 * batch); a report of a version the project does not have is dropped. Past
 * `maxPending` reports waiting, a new one goes straight into the sketch of
 * its (version, kind, day); past `maxPending` of those groups too, it is
 * dropped.
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
import { createBatchWriter, type Queued } from "../kv/batch_writer.ts";
import { addToSketch, mergeSketch } from "../lib/hyperloglog.ts";
import {
  adoptionClientHash,
  adoptionDay,
  type AdoptionMarker,
  DAY_MS,
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
import type { Release } from "../releases/types.ts";
import { sketchPart, sketchPartName } from "./stored_sketch.ts";
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
  /** Batches that found it not trusted yet (0 or 1). */
  untrusted: number;
}

/** A report not trusted yet is looked at once more while younger than this, in ms. */
const TRUST_WAIT_MS = 5_000;

/** Reports of a (version, kind, day) past `maxPending`, in a sketch. */
interface PendingSketch {
  projectId: number;
  version: string;
  kind: ReportKind;
  day: number;
  sketch: Uint8Array;
}

export function createReportRecorder(
  store: Store,
  options: ReportRecorderOptions = {},
): ReportRecorder {
  const {
    newIdsPerDay = 10_000,
    maxPending = 10_000,
    now = Date.now,
    settle = () => Promise.resolve(),
    ...writerOptions
  } = options;
  const writer = createBatchWriter<Pending, PendingSketch>({
    ...writerOptions,
    maxPending,
    now,
    what: "install reports",
    // One install's report of a version and kind: the pending map keeps one.
    keyOf: (report) => `${report.projectId} ${report.version} ${report.kind} ${report.installId}`,
    overflow(parts, { projectId, version, kind, installId }, at) {
      const fields = { projectId, version, kind, day: adoptionDay(at) };
      if (parts.size >= maxPending && !parts.has(sketchPartName(fields))) return;
      addToSketch(sketchPart(parts, fields).sketch, adoptionClientHash(`install:${installId}`));
    },
    async write({ items, overflow, requeue }) {
      await settle().catch(() => {}); // its own errors are its recorder's to report
      await writeBatch(store, {
        batch: items,
        sketches: [...overflow.values()],
        newIdsPerDay,
        nowMs: now(),
        requeue,
      });
    },
  });
  return {
    record: (report) => writer.add({ ...report, untrusted: 0 }),
    flush: writer.flush,
  };
}

/**
 * Resolves the batch's versions, keeps the trusted reports (`requeue`s those
 * that may be trusted a moment later, sketches the others) and writes them.
 */
async function writeBatch(
  store: Store,
  { batch, sketches, newIdsPerDay, nowMs, requeue }: {
    batch: Queued<Pending>[];
    sketches: PendingSketch[];
    newIdsPerDay: number;
    nowMs: number;
    requeue: (queued: Queued<Pending>) => boolean;
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
  const resolved: Array<{ queued: Queued<Pending>; client: string; items: ReportItem[] }> = [];
  for (const queued of batch) {
    const { item: report, at } = queued;
    const release = await releaseOf(report.projectId, report.version);
    if (release === undefined) continue;
    const client = adoptionClientHash(`install:${report.installId}`);
    const item = { releaseId: release.id, address: report.address, client, at };
    const items: ReportItem[] = [{ ...item, kind: report.kind, reason: report.reason }];
    const previous = await releaseOf(report.projectId, report.previousVersion);
    if (
      report.kind === "installed" && previous !== undefined && isNewerRelease(previous, release)
    ) {
      items.push({ ...item, kind: "returned" });
    }
    resolved.push({ queued, client, items });
  }
  // What the gates trust: the install's marker lists the release as offered to it.
  const markers = await getManyEntries<AdoptionMarker>(
    store.kv,
    resolved.map(({ queued, client }) => adoptionClientKey(queued.item.projectId, client)),
  );
  const overflow = new Map<string, ReportSketchPart>();
  const items: ReportItem[] = [];
  for (const [i, { queued, items: reported }] of resolved.entries()) {
    const marker = markers[i].value;
    const offered = marker === null ? [] : offeredReleases(marker);
    const untrusted = reported.filter((item) => !offered.includes(item.releaseId));
    items.push(...reported.filter((item) => offered.includes(item.releaseId)));
    if (untrusted.length === 0) continue;
    if (
      queued.item.untrusted === 0 && nowMs - queued.at < TRUST_WAIT_MS &&
      requeue({ item: { ...queued.item, untrusted: 1 }, at: queued.at })
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
    const at = part.day * DAY_MS;
    const into = reportSketchPartOf(overflow, { releaseId: release.id, kind: part.kind, at });
    mergeSketch(into.sketch, part.sketch);
  }
  await recordReports(store, { items, overflow, newIdsPerDay });
}
