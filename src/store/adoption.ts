/**
 * Adoption counts (docs/rollouts.md "Adoption"): exact distinct clients per
 * release, kept with KV `sum`s, never by scanning clients. Each client of a
 * project has one marker `["adoption_client", project, hash]` holding the
 * release and the (UTC) day it was last seen on, expiring after 90 days.
 * Counter `["adoption_count", project, release, day]` is the number of
 * clients whose marker says (release, day): moving a marker decrements its
 * old counter and increments the new one in one atomic commit checked
 * against the marker, so several instances never count a client twice.
 * The distinct clients of a release in the last N days are the sum of its
 * counters of those days (a client counts once, on its latest sighting).
 */
import { createHash } from "node:crypto";
import { commitWithRetry } from "./atomic.ts";
import { adoptionClientKey, adoptionCountKey, adoptionCountPrefix } from "./keys.ts";

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
}

/**
 * Moves a client's marker to (release, day) and the counters with it; false
 * when the marker already says so (or a later day: a late sighting).
 */
export function recordSighting(kv: Deno.Kv, sighting: Sighting): Promise<boolean> {
  const { projectId, releaseId, client, day } = sighting;
  const key = adoptionClientKey(projectId, client);
  return commitWithRetry(async () => {
    const entry = await kv.get<AdoptionMarker>(key);
    const old = entry.value;
    if (old !== null && (old.day > day || (old.day === day && old.release_id === releaseId))) {
      return { commit: { ok: true, versionstamp: entry.versionstamp! }, value: false };
    }
    const op = kv.atomic().check(entry)
      .set(key, { release_id: releaseId, day } satisfies AdoptionMarker, {
        expireIn: ADOPTION_MARKER_DAYS * DAY_MS,
      })
      .sum(adoptionCountKey(projectId, releaseId, day), 1n);
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

/** The project's adoption figures on `today` (a day number): its counters, at most releases × 90. */
export async function getAdoption(
  kv: Deno.Kv,
  projectId: number,
  today: number,
): Promise<AdoptionFigures> {
  const figures: AdoptionFigures = {
    releases: new Map(),
    total: { d1: 0, d7: 0, d30: 0 },
    stale: 0,
    daily: new Map(),
  };
  for await (const entry of kv.list<Deno.KvU64>({ prefix: adoptionCountPrefix(projectId) })) {
    const [, , releaseId, day] = entry.key as [string, number, number, number];
    const count = Number(entry.value.value);
    const age = today - day;
    if (count === 0 || age < 0 || age >= ADOPTION_MARKER_DAYS) continue;
    if (age >= STALE_DAYS) {
      figures.stale += count;
      continue;
    }
    const counts = figures.releases.get(releaseId) ?? { d1: 0, d7: 0, d30: 0 };
    figures.releases.set(releaseId, counts);
    for (const target of [counts, figures.total]) {
      if (age < 1) target.d1 += count;
      if (age < 7) target.d7 += count;
      target.d30 += count;
    }
    const daily = figures.daily.get(releaseId) ?? new Map<number, number>();
    figures.daily.set(releaseId, daily);
    daily.set(day, (daily.get(day) ?? 0) + count);
  }
  return figures;
}

/** Records client sightings off the hot path (one per instance, made by the app). */
export interface AdoptionRecorder {
  /** Notes that `identity` was answered `releaseId` of project `projectId`; returns at once. */
  record(sighting: { projectId: number; releaseId: number; identity: string }): void;
  /** Resolves once every write started so far has ended (tests, shutdown). */
  flush(): Promise<void>;
}

export interface AdoptionRecorderOptions {
  onKvError?: () => void;
  /** Clients remembered per day before the memory starts over (default 100,000). */
  maxClients?: number;
  /** The clock, in ms. */
  now?: () => number;
}

/**
 * A recorder that writes a client's sighting at most once per day and
 * release on this instance: it remembers in memory what it wrote today, so
 * a request costs a map lookup, and only a new (client, release, day) starts
 * a write (recordSighting, not awaited). Other instances' writes of the same
 * sighting are no-ops through the marker.
 */
export function createAdoptionRecorder(
  kv: Deno.Kv,
  options: AdoptionRecorderOptions = {},
): AdoptionRecorder {
  const { onKvError = () => {}, maxClients = 100_000, now = Date.now } = options;
  const seen = new Map<string, number>();
  const pending = new Set<Promise<unknown>>();
  let seenDay = -1;
  return {
    record({ projectId, releaseId, identity }) {
      const day = adoptionDay(now());
      if (day !== seenDay || seen.size >= maxClients) {
        seen.clear();
        seenDay = day;
      }
      const remembered = `${projectId} ${identity}`;
      if (seen.get(remembered) === releaseId) return;
      seen.set(remembered, releaseId);
      const write: Promise<unknown> = recordSighting(kv, {
        projectId,
        releaseId,
        client: adoptionClientHash(identity),
        day,
      }).catch((error) => {
        seen.delete(remembered);
        onKvError();
        console.error("could not record a client sighting:", error);
      }).finally(() => pending.delete(write));
      pending.add(write);
    },
    async flush() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
