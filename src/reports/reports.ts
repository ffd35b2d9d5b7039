/**
 * Install reports (docs/reports.md): what installs say about an update,
 * counted once per install id, release and kind. A counted report is a
 * marker `["report_marker", release, kind, hash]` (expiring after 90 days)
 * plus a `sum` on the release's counter and on its hourly counter, written in
 * one commit checked against the marker, so any number of instances count an
 * install once. Only trusted reports get here (report_recorder.ts). New
 * markers are capped per client address (an IPv6 one as its /64) and UTC
 * day (counter
 * `["report_new_ids", address, day]`, read before the commit); a report past
 * the cap, like an untrusted one, goes into a HyperLogLog sketch of its
 * (release, kind, day) instead, a fixed 4 KiB however many install ids an
 * address invents, and is shown apart (never counted by the health gates).
 */
import { addToSketch, createSketch, estimateSketch, mergeSketch } from "../lib/hyperloglog.ts";
import { commitWithRetry } from "../kv/atomic.ts";
import { getManyEntries } from "../kv/get_many.ts";
import {
  reportCountKey,
  reportHourlyKey,
  reportHourlyPrefix,
  reportMarkerKey,
  reportNewIdsKey,
  reportReasonsKey,
  reportSketchKey,
  reportSketchPrefix,
} from "../kv/keys.ts";
import { adoptionDay, DAY_MS } from "./adoption.ts";
import { sketchPart } from "./stored_sketch.ts";
import { writeCapped } from "./capped_write.ts";
import type { Store } from "../kv/store.ts";

/** What a report says: the install runs the release now, came back to it, or failed at a step. */
const REPORT_KINDS = [
  "installed",
  "returned",
  "download",
  "verification",
  "install",
  "crash",
] as const;
export type ReportKind = typeof REPORT_KINDS[number];

/** The kinds that are failures (the health gates' failure share). */
const FAILURE_KINDS: readonly ReportKind[] = [
  "download",
  "verification",
  "install",
  "crash",
];

const HOUR_MS = 3_600_000;
/** How long a marker (and a sketch) lives: an install reporting again later is still counted once. */
const REPORT_MARKER_DAYS = 90;
/** Failure reasons kept per release and kind (the newest). */
const REPORT_REASONS_KEPT = 20;
/** One report of a batch, its install id already hashed. */
export interface ReportItem {
  releaseId: number;
  kind: ReportKind;
  /** The client address it came from (the new-id cap is per address). */
  address: string;
  /** The first 128 bits of the SHA-256 of the install id, as hex. */
  client: string;
  /** When it arrived, in ms. */
  at: number;
  /** A failure's short reason. */
  reason?: string;
}

/** Reports of a (release, kind, day) counted in a sketch rather than with markers. */
export interface ReportSketchPart {
  releaseId: number;
  kind: ReportKind;
  day: number;
  sketch: Uint8Array;
}

/** A failure reason as kept. */
export interface ReportReason {
  at: string;
  reason: string;
}

/** The sketch part an item belongs to, in `parts` (made when missing). */
export function reportSketchPartOf(
  parts: Map<string, ReportSketchPart>,
  item: { releaseId: number; kind: ReportKind; at: number },
): ReportSketchPart {
  return sketchPart(parts, reportSketchOf(item));
}

/** What the sketch of an item counts: its (release, kind, day). */
function reportSketchOf(
  { releaseId, kind, at }: { releaseId: number; kind: ReportKind; at: number },
): Omit<ReportSketchPart, "sketch"> {
  return { releaseId, kind, day: adoptionDay(at) };
}

/**
 * Writes a batch of trusted reports (at most one per install, release and
 * kind): a report already counted changes nothing; a new one is counted
 * while its address has made fewer than `newIdsPerDay` markers that UTC day,
 * else it goes into its sketch, with `overflow`. Once an address is at its
 * cap, its reports go to the sketch without reading their markers (one
 * counted before is then in the estimate too).
 */
export async function recordReports(
  store: Store,
  batch: { items: ReportItem[]; overflow: Map<string, ReportSketchPart>; newIdsPerDay: number },
): Promise<void> {
  const { items, overflow, newIdsPerDay } = batch;
  const byAddressDay = Map.groupBy(items, (item) => `${item.address} ${adoptionDay(item.at)}`);
  // An address already at its cap that day: its reports go to the sketches unread (a flood
  // costs one read per batch, not one per report).
  const groups: ReportItem[][] = [];
  const counts = await getManyEntries<number>(
    store.kv,
    [...byAddressDay.values()].map((group) =>
      reportNewIdsKey(group[0].address, adoptionDay(group[0].at))
    ),
  );
  for (const [i, group] of [...byAddressDay.values()].entries()) {
    if ((counts[i].value ?? 0) >= newIdsPerDay) {
      for (const item of group) addToSketch(reportSketchPartOf(overflow, item).sketch, item.client);
      continue;
    }
    const markers = await getManyEntries<number>(
      store.kv,
      group.map((item) => reportMarkerKey(item.releaseId, item.kind, item.client)),
    );
    groups.push(group.filter((_, j) => markers[j].value === null));
  }
  const { admitted } = await writeCapped(store, {
    groups,
    cap: newIdsPerDay,
    countKey: (first) => reportNewIdsKey(first.address, adoptionDay(first.at)),
    markerKey: (item) => reportMarkerKey(item.releaseId, item.kind, item.client),
    marker: (item) => ({
      value: 1,
      expireIn: REPORT_MARKER_DAYS * DAY_MS,
      counters: [
        reportCountKey(item.releaseId, item.kind),
        reportHourlyKey(item.releaseId, item.kind, Math.floor(item.at / HOUR_MS)),
      ],
    }),
    unreadPastCap: true,
    overflow,
    sketchOf: reportSketchOf,
    sketchKey: (part) => reportSketchKey(part.releaseId, part.kind, part.day),
    keptDays: REPORT_MARKER_DAYS,
  });
  const reasons = new Map<string, { releaseId: number; kind: ReportKind; added: ReportReason[] }>();
  for (const item of admitted) {
    if (item.reason === undefined || item.reason === "") continue;
    const name = `${item.releaseId} ${item.kind}`;
    const entry = reasons.get(name) ?? { releaseId: item.releaseId, kind: item.kind, added: [] };
    entry.added.push({ at: new Date(item.at).toISOString(), reason: item.reason });
    reasons.set(name, entry);
  }
  for (const { releaseId, kind, added } of reasons.values()) {
    await keepReasons(store, { releaseId, kind, added });
  }
}

/** Adds `added` to the kept reasons of a release and kind, the newest `REPORT_REASONS_KEPT`. */
async function keepReasons(
  store: Store,
  { releaseId, kind, added }: { releaseId: number; kind: ReportKind; added: ReportReason[] },
): Promise<void> {
  const key = reportReasonsKey(releaseId, kind);
  await commitWithRetry(async () => {
    const entry = await store.kv.get<ReportReason[]>(key);
    const kept = [...added.reverse(), ...entry.value ?? []].slice(0, REPORT_REASONS_KEPT);
    return {
      commit: await store.kv.atomic().check(entry).set(key, kept, {
        expireIn: REPORT_MARKER_DAYS * DAY_MS,
      }).commit(),
      value: 0,
    };
  });
}

/** Counted installs per kind of a release (exact: the health gates read these). */
export type ReportCounts = Record<ReportKind, number>;

function emptyReportCounts(): ReportCounts {
  return { installed: 0, returned: 0, download: 0, verification: 0, install: 0, crash: 0 };
}

/** The failures among `counts` (every failure kind). */
export function failuresOf(counts: ReportCounts): number {
  return FAILURE_KINDS.reduce((sum, kind) => sum + counts[kind], 0);
}

/** The counted reports of a release, per kind (six reads at once). */
export async function getReportCounts(store: Store, releaseId: number): Promise<ReportCounts> {
  const entries = await getManyEntries<Deno.KvU64>(
    store.kv,
    REPORT_KINDS.map((kind) => reportCountKey(releaseId, kind)),
  );
  const counts = emptyReportCounts();
  for (const [i, kind] of REPORT_KINDS.entries()) {
    counts[kind] = Number(entries[i].value?.value ?? 0n);
  }
  return counts;
}

/** The reports not counted (untrusted, or past an address's cap), estimated per kind from the release's sketches. */
export async function getReportEstimates(store: Store, releaseId: number): Promise<ReportCounts> {
  const unions = new Map<ReportKind, Uint8Array>();
  for await (const entry of store.kv.list<Uint8Array>({ prefix: reportSketchPrefix(releaseId) })) {
    const kind = entry.key[2] as ReportKind;
    const union = unions.get(kind) ?? createSketch();
    mergeSketch(union, entry.value);
    unions.set(kind, union);
  }
  const counts = emptyReportCounts();
  for (const [kind, sketch] of unions) counts[kind] = estimateSketch(sketch);
  return counts;
}

/** One hour of a release's counted reports: installs (installed and returned) and failures. */
export interface ReportHour {
  /** Hours since the epoch (UTC). */
  hour: number;
  installed: number;
  failed: number;
}

/** A release's counted reports per hour since `sinceMs`, oldest first. */
export async function getReportSeries(
  store: Store,
  releaseId: number,
  sinceMs: number,
): Promise<ReportHour[]> {
  const hours = new Map<number, ReportHour>();
  const first = Math.floor(sinceMs / HOUR_MS);
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: reportHourlyPrefix(releaseId) })) {
    const [, , kind, hour] = entry.key as [string, number, ReportKind, number];
    if (hour < first) continue;
    const row = hours.get(hour) ?? { hour, installed: 0, failed: 0 };
    const count = Number(entry.value.value);
    if (FAILURE_KINDS.includes(kind)) row.failed += count;
    else row.installed += count;
    hours.set(hour, row);
  }
  return [...hours.values()].sort((a, b) => a.hour - b.hour);
}

/** The newest failure reasons of a release, per failure kind. */
export async function getReportReasons(
  store: Store,
  releaseId: number,
): Promise<Map<ReportKind, ReportReason[]>> {
  const entries = await getManyEntries<ReportReason[]>(
    store.kv,
    FAILURE_KINDS.map((kind) => reportReasonsKey(releaseId, kind)),
  );
  const reasons = new Map<ReportKind, ReportReason[]>();
  for (const [i, kind] of FAILURE_KINDS.entries()) {
    if (entries[i].value !== null) reasons.set(kind, entries[i].value!);
  }
  return reasons;
}
