/**
 * Adoption counts (docs/rollouts.md "Adoption"): exact distinct clients per
 * release, kept with KV `sum`s, never by scanning clients. Each client of a
 * project has one marker `["adoption_client", project, hash]` holding the
 * release, the (UTC) day and the time of its latest sighting, expiring after
 * 90 days. Counter `["adoption_count", project, release, day]` is the number
 * of clients whose marker says (release, day): moving a marker decrements its
 * old counter and increments the new one in one atomic commit checked
 * against the marker, and only a later sighting moves it, so any number of
 * instances writing in any order leave each client counted once, for the
 * release of its latest sighting. The marker also keeps the releases the
 * service offered the client (`offered`, newest first): the install reports
 * of a release count only from clients offered it (reports.ts). New install
 * ids past an address's new-id cap get no marker and are counted in sketches
 * instead (adoption_batch.ts).
 */
import { createHash } from "node:crypto";
import { createSketch, estimateSketch, mergeSketch } from "../lib/hyperloglog.ts";
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import {
  adoptionClientKey,
  adoptionCountKey,
  adoptionCountPrefix,
  adoptionSketchPrefix,
} from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export const DAY_MS = 86_400_000;
/** How long a client's marker lives without a sighting. */
export const ADOPTION_MARKER_DAYS = 90;
/** A client not seen for this many days is stale. */
export const STALE_DAYS = 30;

/** −1 for a KV `sum` (a u64 that wraps). */
const MINUS_ONE = (1n << 64n) - 1n;

export interface AdoptionMarker {
  release_id: number;
  /** Days since the epoch (UTC). */
  day: number;
  /** The time of the sighting in ms (absent on markers written without one: the day's start). */
  at?: number;
  /**
   * The releases the service offered this client (a latest answer, a feed, or
   * a download of the release its rollout bucket or tester tag gives it),
   * newest first, at most OFFERED_KEPT. Absent on markers written before
   * markers kept it: their `release_id` was answered to the client.
   */
  offered?: number[];
}

/** Releases kept in a marker's `offered` (a client moves through few releases in 90 days). */
export const OFFERED_KEPT = 8;

/** The releases `marker` says its client was offered. */
export function offeredReleases(marker: AdoptionMarker): readonly number[] {
  return marker.offered ?? [marker.release_id];
}

/** The marker's `offered` once `sighting` is written (its releases as they were when it adds none). */
function offeredAfter(marker: AdoptionMarker | null, sighting: Sighting): number[] {
  const before = marker === null ? [] : [...offeredReleases(marker)];
  if (!sighting.offered || before.includes(sighting.releaseId)) return before;
  return [sighting.releaseId, ...before].slice(0, OFFERED_KEPT);
}

/** The day number of a time in ms (UTC days since the epoch). */
export function adoptionDay(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** A client's identity (`install:…` or `key:…`) as stored: the first 128 bits of its SHA-256. */
export function adoptionClientHash(identity: string): string {
  return createHash("sha256").update(identity).digest("hex").slice(0, 32);
}

export interface Sighting {
  projectId: number;
  releaseId: number;
  /** adoptionClientHash of the client's identity. */
  client: string;
  day: number;
  /** When the client was answered, in ms within `day` (default: the day's start). */
  at?: number;
  /**
   * Whether the service offered the client this release (a latest answer or a
   * feed, or a download of the release the client's rollout place gives it),
   * rather than a download of a release by id.
   */
  offered?: boolean;
}

/**
 * Whether `sighting` moves a client's `marker`: a first sighting, a later
 * day, or another release at the same time or later on the same day. A
 * repeat of the marker's (release, day) or an earlier sighting moves nothing.
 */
export function movesMarker(marker: AdoptionMarker | null, sighting: Sighting): boolean {
  if (marker === null || sighting.day > marker.day) return true;
  if (sighting.day < marker.day || sighting.releaseId === marker.release_id) return false;
  return (sighting.at ?? sighting.day * DAY_MS) >= (marker.at ?? marker.day * DAY_MS);
}

/**
 * Whether writing `sighting` changes a client's `marker`: it moves it
 * (movesMarker), or it offers a release the marker does not list yet.
 */
export function changesMarker(marker: AdoptionMarker | null, sighting: Sighting): boolean {
  if (movesMarker(marker, sighting)) return true;
  return sighting.offered === true && marker !== null &&
    !offeredReleases(marker).includes(sighting.releaseId);
}

/** A new client's marker for `sighting`. */
export function newMarker(sighting: Sighting): AdoptionMarker {
  const { releaseId, day, at } = sighting;
  return {
    release_id: releaseId,
    day,
    at: at ?? day * DAY_MS,
    offered: offeredAfter(null, sighting),
  };
}

/**
 * Moves a client's marker to the sighting's (release, day) and the counters
 * with it, and adds an offered release to its list; false when the sighting
 * changes nothing (changesMarker). `read`,
 * the marker's entry as the caller already read it, serves the first
 * attempt (the commit is checked against it; a retry reads afresh).
 */
export function recordSighting(
  store: Store,
  sighting: Sighting,
  read?: Deno.KvEntryMaybe<AdoptionMarker>,
): Promise<boolean> {
  const { projectId, releaseId, client, day } = sighting;
  const key = adoptionClientKey(projectId, client);
  let known = read;
  return commitWithRetry(async () => {
    const entry = known ?? await store.kv.get<AdoptionMarker>(key);
    known = undefined;
    const old = entry.value;
    if (!changesMarker(old, sighting)) {
      return { commit: NOTHING_TO_WRITE, value: false };
    }
    const offered = offeredAfter(old, sighting);
    if (!movesMarker(old, sighting)) {
      // Only the list of offered releases grows; the counters stay (the marker's expiry too).
      const kept = { ...old!, offered };
      const op = store.kv.atomic().check(entry).set(key, kept, {
        expireIn: Math.max(
          1,
          (old!.at ?? old!.day * DAY_MS) + ADOPTION_MARKER_DAYS * DAY_MS - Date.now(),
        ),
      });
      return { commit: await op.commit(), value: true };
    }
    const marker: AdoptionMarker = {
      release_id: releaseId,
      day,
      at: sighting.at ?? day * DAY_MS,
      offered,
    };
    const op = store.kv.atomic().check(entry)
      .set(key, marker, { expireIn: ADOPTION_MARKER_DAYS * DAY_MS });
    op.sum(adoptionCountKey(projectId, releaseId, day), 1n);
    if (old !== null) op.sum(adoptionCountKey(projectId, old.release_id, old.day), MINUS_ONE);
    return { commit: await op.commit(), value: true };
  });
}

/** Distinct clients in the last 1, 7 and 30 days. */
export interface WindowCounts {
  d1: number;
  d7: number;
  d30: number;
}

export interface AdoptionFigures {
  /** Per release seen in the last 30 days: its clients (each counted on its latest sighting). */
  releases: Map<number, WindowCounts>;
  /** All the project's clients seen in each window. */
  total: WindowCounts;
  /** Clients last seen 30 to 90 days ago. */
  stale: number;
  /** Clients seen in the last 30 days per day of their latest sighting, per release (the chart). */
  daily: Map<number, Map<number, number>>;
}

/**
 * The project's adoption figures on `today` (a day number): its counters, at
 * most releases × 90, plus the estimates of its sketches (clients past an
 * address's new-id cap; none in the usual case), at most releases × 90 too.
 */
export async function getAdoption(
  store: Store,
  projectId: number,
  today: number,
): Promise<AdoptionFigures> {
  const figures: AdoptionFigures = {
    releases: new Map(),
    total: { d1: 0, d7: 0, d30: 0 },
    stale: 0,
    daily: new Map(),
  };
  const countsOf = (releaseId: number) => {
    const counts = figures.releases.get(releaseId) ?? { d1: 0, d7: 0, d30: 0 };
    figures.releases.set(releaseId, counts);
    return counts;
  };
  const addDaily = (releaseId: number, day: number, count: number) => {
    const daily = figures.daily.get(releaseId) ?? new Map<number, number>();
    figures.daily.set(releaseId, daily);
    daily.set(day, (daily.get(day) ?? 0) + count);
  };
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: adoptionCountPrefix(projectId) })) {
    const [, , releaseId, day] = entry.key as [string, number, number, number];
    const count = Number(entry.value.value);
    const age = today - day;
    if (count === 0 || age < 0 || age >= ADOPTION_MARKER_DAYS) continue;
    if (age >= STALE_DAYS) {
      figures.stale += count;
      continue;
    }
    addToWindows(countsOf(releaseId), age, count);
    addToWindows(figures.total, age, count);
    addDaily(releaseId, day, count);
  }
  const sketches = await sketchWindows(store, projectId, today);
  for (const [releaseId, { windows, days }] of sketches.releases) {
    addEstimates(countsOf(releaseId), windows);
    for (const [day, sketch] of days) addDaily(releaseId, day, estimateSketch(sketch));
  }
  addEstimates(figures.total, sketches.total);
  figures.stale += estimateSketch(sketches.stale);
  return figures;
}

function addToWindows(target: WindowCounts, age: number, count: number): void {
  if (age < 1) target.d1 += count;
  if (age < 7) target.d7 += count;
  target.d30 += count;
}

/** One sketch per window: the union of the day sketches in it. */
interface SketchWindows {
  d1: Uint8Array;
  d7: Uint8Array;
  d30: Uint8Array;
}

function addEstimates(target: WindowCounts, windows: SketchWindows): void {
  target.d1 += estimateSketch(windows.d1);
  target.d7 += estimateSketch(windows.d7);
  target.d30 += estimateSketch(windows.d30);
}

function emptyWindows(): SketchWindows {
  return { d1: createSketch(), d7: createSketch(), d30: createSketch() };
}

function mergeIntoWindows(windows: SketchWindows, age: number, sketch: Uint8Array): void {
  if (age < 1) mergeSketch(windows.d1, sketch);
  if (age < 7) mergeSketch(windows.d7, sketch);
  mergeSketch(windows.d30, sketch);
}

/** The project's sketches by release and window, each day's, and the union of the stale ones. */
async function sketchWindows(store: Store, projectId: number, today: number) {
  const releases = new Map<number, { windows: SketchWindows; days: Map<number, Uint8Array> }>();
  const total = emptyWindows();
  const stale = createSketch();
  for await (
    const entry of store.kv.list<Uint8Array>({ prefix: adoptionSketchPrefix(projectId) })
  ) {
    const [, , releaseId, day] = entry.key as [string, number, number, number];
    const age = today - day;
    if (age < 0 || age >= ADOPTION_MARKER_DAYS) continue;
    if (age >= STALE_DAYS) {
      mergeSketch(stale, entry.value);
      continue;
    }
    const release = releases.get(releaseId) ?? { windows: emptyWindows(), days: new Map() };
    releases.set(releaseId, release);
    mergeIntoWindows(release.windows, age, entry.value);
    mergeIntoWindows(total, age, entry.value);
    release.days.set(day, entry.value);
  }
  return { releases, total, stale };
}
