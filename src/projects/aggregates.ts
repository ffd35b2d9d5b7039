/**
 * Maintained aggregates, so that admin pages cost what they show (issue 19
 * item 4): counts of projects, releases and keys by state, each project's
 * release count and artifact bytes, tag counts, and the indexes the lists page through
 * (`releases_by_time`, `projects_by_name`, `api_keys_by_expiry`).
 *
 * Every write adds the changes of its record to its own atomic operation
 * (`projectAggregates`, `releaseAggregates`, `apiKeyAggregates`, given the
 * record before and after; null for "none"), so a count moves in the same
 * commit as what it counts. Counts are KV `sum`s (a decrement adds 2^64 - 1,
 * which wraps), so concurrent writers never conflict on them.
 *
 * Data written before the aggregates existed gets them once, from
 * `buildAggregates` at start (main.ts): one instance holds the build's lease
 * (leases.ts), the others serve meanwhile (paths that must be exact, such as
 * the latest pointer on archive, fall back to a scan until the marker says
 * the build is done; see `aggregatesReady`).
 */
import {
  aggregatesMarkerKey,
  apiKeyExpiryKey,
  apiKeyExpiryPrefix,
  apiKeysPrefix,
  type CountedKind,
  countKey,
  countsPrefix,
  projectByNameKey,
  projectBytesKey,
  projectBytesPrefix,
  projectReleaseCountKey,
  projectsPrefix,
  projectTagKey,
  projectTagsPrefix,
  releaseByTimeKey,
  releasesPrefix,
} from "../kv/keys.ts";
import { getManyEntries } from "../kv/get_many.ts";
import { claimLease, releaseLease } from "../kv/leases.ts";
import type { Project } from "./types.ts";
import type { Store } from "../kv/store.ts";

/**
 * What the counts read of a release (a `Release` passes): its state, its
 * project, its size and the upload time the time index orders it by.
 */
export interface CountedRelease {
  id: number;
  project_id: number;
  state: string;
  size_bytes: number;
  created_at: string;
}

/** What the counts read of an API key (an `ApiKey` passes): enabled, and its expiry. */
export interface CountedKey {
  id: number;
  active: boolean;
  expires_at: string | null;
}

/** Bumped when a new aggregate needs a build over existing data. */
export const AGGREGATES_VERSION = 2;
/** A build that has not finished after this long is taken over (its instance died). */
const BUILD_STALE_MS = 10 * 60_000;
/** `sum` of this is a decrement by one (KV sums wrap around at 2^64). */
const MINUS_ONE = 0xffff_ffff_ffff_ffffn;

export interface AggregatesMarker {
  version: number;
  /** Set by builds of earlier versions while they ran (they kept their claim here); null when built. */
  building_since: string | null;
}

function isBuilt(marker: AggregatesMarker | null): boolean {
  return marker !== null && marker.version >= AGGREGATES_VERSION && marker.building_since === null;
}

/** `sum` of this is a decrement by `n` (wraps like {@link MINUS_ONE}). */
function minus(n: number): bigint {
  return n === 0 ? 0n : (1n << 64n) - BigInt(n);
}

function bump(op: Deno.AtomicOperation, key: Deno.KvKey, delta: 1 | -1): void {
  op.sum(key, delta === 1 ? 1n : MINUS_ONE);
}

/** A count as a number; a count that went below zero (a missed build) reads as 0. */
export function countOf(value: Deno.KvU64 | null | undefined): number {
  const n = value?.value ?? 0n;
  return n >= 1n << 63n ? 0 : Number(n);
}

function stateChange(
  op: Deno.AtomicOperation,
  kind: CountedKind,
  [before, after]: [string | undefined, string | undefined],
): void {
  if (before === after) return;
  if (before !== undefined) bump(op, countKey(kind, before), -1);
  if (after !== undefined) bump(op, countKey(kind, after), 1);
}

/** The aggregate changes of a project write (created: `before` null; deleted: `after` null). */
export function projectAggregates(
  op: Deno.AtomicOperation,
  before: Project | null,
  after: Project | null,
): Deno.AtomicOperation {
  stateChange(op, "projects", [before?.state, after?.state]);
  if (
    before !== null &&
    (after === null || before.name !== after.name || before.state !== after.state)
  ) {
    op.delete(projectByNameKey(before));
  }
  if (after !== null) op.set(projectByNameKey(after), after.id);
  const old = new Set(before?.tags ?? []);
  const next = new Set(after?.tags ?? []);
  for (const tag of old) if (!next.has(tag)) bump(op, projectTagKey(tag), -1);
  for (const tag of next) if (!old.has(tag)) bump(op, projectTagKey(tag), 1);
  return op;
}

/** The aggregate changes of a release write (created: `before` null; deleted: `after` null). */
export function releaseAggregates(
  op: Deno.AtomicOperation,
  before: CountedRelease | null,
  after: CountedRelease | null,
): Deno.AtomicOperation {
  stateChange(op, "releases", [before?.state, after?.state]);
  if (before === null && after !== null) {
    op.set(releaseByTimeKey(after), after.id);
    bump(op, projectReleaseCountKey(after.project_id), 1);
    op.sum(projectBytesKey(after.project_id), BigInt(after.size_bytes));
  }
  if (before !== null && after === null) {
    op.delete(releaseByTimeKey(before));
    bump(op, projectReleaseCountKey(before.project_id), -1);
    op.sum(projectBytesKey(before.project_id), minus(before.size_bytes));
  }
  return op;
}

/** The state a key is counted under (`["counts", "api_keys", state]`): enabled or disabled. */
function countedKeyState(key: CountedKey | null): string | undefined {
  return key === null ? undefined : key.active ? "enabled" : "disabled";
}

/** The aggregate changes of a key write (created: `before` null; deleted: `after` null). */
export function apiKeyAggregates(
  op: Deno.AtomicOperation,
  before: CountedKey | null,
  after: CountedKey | null,
): Deno.AtomicOperation {
  stateChange(op, "api_keys", [countedKeyState(before), countedKeyState(after)]);
  if (before?.expires_at && before.expires_at !== after?.expires_at) {
    op.delete(apiKeyExpiryKey(before.expires_at, before.id));
  }
  if (after?.expires_at) op.set(apiKeyExpiryKey(after.expires_at, after.id), after.active);
  return op;
}

/** Records of each kind by state: `{ projects: { active, archived }, ... }` (one short list). */
export async function getCounts(
  store: Store,
): Promise<Record<CountedKind, Record<string, number>>> {
  const counts: Record<CountedKind, Record<string, number>> = {
    projects: {},
    releases: {},
    api_keys: {},
  };
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: countsPrefix() })) {
    const [, kind, state] = entry.key as [string, CountedKind, string];
    if (kind in counts) counts[kind][state] = countOf(entry.value);
  }
  return counts;
}

/** Releases of one project, in every state. */
export async function getProjectReleaseCount(store: Store, projectId: number): Promise<number> {
  return countOf((await store.kv.get<Deno.KvU64>(projectReleaseCountKey(projectId))).value);
}

/** Bytes of each project's artifacts (every state), by project id; absent ids read as 0. */
export async function getProjectBytes(
  store: Store,
  projectIds: readonly number[],
): Promise<Map<number, number>> {
  const entries = await getManyEntries<Deno.KvU64>(store.kv, projectIds.map(projectBytesKey));
  return new Map(projectIds.map((id, i) => [id, countOf(entries[i].value)]));
}

/**
 * The projects that store the most bytes (at most `limit`) and the total of
 * all, from one read of the per-project sums (one entry per project).
 */
export async function getStorageByProject(
  store: Store,
  { limit }: { limit: number },
): Promise<{ total: number; top: Array<{ projectId: number; bytes: number }> }> {
  let total = 0;
  const all: Array<{ projectId: number; bytes: number }> = [];
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: projectBytesPrefix() })) {
    const bytes = countOf(entry.value);
    total += bytes;
    if (bytes > 0) all.push({ projectId: Number(entry.key[1]), bytes });
  }
  all.sort((a, b) => b.bytes - a.bytes || a.projectId - b.projectId);
  return { total, top: all.slice(0, limit) };
}

/** The tags that projects carry, sorted (at most `limit`). */
export async function listProjectTags(store: Store, limit: number): Promise<string[]> {
  const tags: string[] = [];
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: projectTagsPrefix() })) {
    if (countOf(entry.value) > 0) tags.push(String(entry.key[1]));
    if (tags.length >= limit) break;
  }
  return tags;
}

/**
 * Enabled keys whose expiry has passed, counting at most `cap` (the page says
 * "at least" beyond): one range read of the expiry index up to now.
 */
export async function countExpiredEnabledKeys(
  store: Store,
  { now, cap }: { now: string; cap: number },
): Promise<{ count: number; capped: boolean }> {
  let count = 0;
  let read = 0;
  const end = [...apiKeyExpiryPrefix(), `${now}\u0000`];
  for await (
    const entry of store.kv.list<boolean>({ start: apiKeyExpiryPrefix(), end }, { limit: cap })
  ) {
    read++;
    if (entry.value === true) count++;
  }
  return { count, capped: read >= cap };
}

/** Whether the aggregates hold for all data (built, or the KV started with them). */
export async function aggregatesReady(store: Store): Promise<boolean> {
  return isBuilt((await store.kv.get<AggregatesMarker>(aggregatesMarkerKey())).value);
}

/** Mutations per commit of the build (KV takes 1,000). */
const BUILD_BATCH = 400;

/**
 * Builds the aggregates of data written before they existed, once: the
 * instance that holds the build's lease scans every project, release and key and
 * writes their index entries and counts; the others return at once. Returns
 * what it did. A KV without any record is marked built at once.
 *
 * Counts are written as totals at the end, so a write on another instance
 * during the build (seconds at most) can be missed by one; see
 * docs/architecture.md "Admin pages at scale".
 */
export async function buildAggregates(
  store: Store,
): Promise<"ready" | "building elsewhere" | "built"> {
  const marker = async () => (await store.kv.get<AggregatesMarker>(aggregatesMarkerKey())).value;
  if (isBuilt(await marker())) return "ready";
  const holder = crypto.randomUUID();
  if (!await claimLease(store, "aggregates_build", { holder, ttlMs: BUILD_STALE_MS })) {
    return "building elsewhere";
  }
  try {
    // Under the lease: another instance may have finished since the first look.
    if (isBuilt(await marker())) {
      await releaseLease(store, "aggregates_build", { holder });
      return "ready";
    }
    await writeAggregates(store);
  } catch (error) {
    await releaseLease(store, "aggregates_build", { holder }).catch(() => {});
    throw error;
  }
  const built: AggregatesMarker = { version: AGGREGATES_VERSION, building_since: null };
  await releaseLease(store, "aggregates_build", {
    holder,
    also: (op) => op.set(aggregatesMarkerKey(), built),
  });
  return "built";
}

/** The build itself: every record's index entries, then the counts as totals. */
async function writeAggregates(store: Store): Promise<void> {
  const counts = new Map<string, { key: Deno.KvKey; n: bigint }>();
  const count = (key: Deno.KvKey, by = 1n) => {
    const id = JSON.stringify(key);
    const current = counts.get(id) ?? { key, n: 0n };
    current.n += by;
    counts.set(id, current);
  };
  let op = store.kv.atomic();
  let pending = 0;
  const flush = async (force = false) => {
    if (pending === 0 || (!force && pending < BUILD_BATCH)) return;
    await op.commit();
    op = store.kv.atomic();
    pending = 0;
  };
  for await (const { value: project } of store.kv.list<Project>({ prefix: projectsPrefix() })) {
    op.set(projectByNameKey(project), project.id);
    pending++;
    count(countKey("projects", project.state));
    for (const tag of new Set(project.tags)) count(projectTagKey(tag));
    await flush();
  }
  for await (
    const { value: release } of store.kv.list<CountedRelease>({ prefix: releasesPrefix() })
  ) {
    op.set(releaseByTimeKey(release), release.id);
    pending++;
    count(countKey("releases", release.state));
    count(projectReleaseCountKey(release.project_id));
    count(projectBytesKey(release.project_id), BigInt(release.size_bytes));
    await flush();
  }
  for await (const { value: key } of store.kv.list<CountedKey>({ prefix: apiKeysPrefix() })) {
    if (key.expires_at) {
      op.set(apiKeyExpiryKey(key.expires_at, key.id), key.active);
      pending++;
    }
    count(countKey("api_keys", key.active ? "enabled" : "disabled"));
    await flush();
  }
  await flush(true);
  // Totals replace whatever sums were made so far (by writes of this version before the build).
  const totals = [...counts.values()];
  for (let i = 0; i < totals.length; i += BUILD_BATCH) {
    const batch = store.kv.atomic();
    for (const { key, n } of totals.slice(i, i + BUILD_BATCH)) batch.set(key, new Deno.KvU64(n));
    await batch.commit();
  }
}

/**
 * The ids and expiry times of enabled keys that expire from `from` up to `until` (RFC 3339),
 * soonest first, at most `limit` (read from the expiry index, not the keys).
 */
export async function listKeysExpiringBetween(
  store: Store,
  { from, until, limit }: { from: string; until: string; limit: number },
): Promise<Array<{ keyId: number; expiresAt: string }>> {
  const found: Array<{ keyId: number; expiresAt: string }> = [];
  const range = {
    start: [...apiKeyExpiryPrefix(), from],
    end: [...apiKeyExpiryPrefix(), `${until}\u0000`],
  };
  for await (const entry of store.kv.list<boolean>(range)) {
    if (entry.value !== true) continue;
    const [, expiresAt, keyId] = entry.key as [string, string, number];
    found.push({ keyId, expiresAt });
    if (found.length >= limit) break;
  }
  return found;
}
