import { listAllSparkleDeltas } from "../artifact_records/sparkle_deltas.ts";
import { listAllSquirrelDeltas } from "../artifact_records/squirrel_deltas.ts";
import { listAllVelopackDeltas } from "../artifact_records/velopack.ts";
import { listAllArtifactPatches } from "../artifact_records/artifact_patches.ts";
import { RELEASE_NOTES_MAX_LENGTH, VERSION_MAX_LENGTH } from "../lib/limits.ts";
import { aggregatesReady, releaseAggregates } from "../projects/aggregates.ts";
import { NOTHING_TO_WRITE, now, serializedProjectWrite, takeIds } from "../kv/atomic.ts";
import { cachedRead, changeOp, commitChange, type MaybeAsync, thenRead } from "../kv/cache.ts";
import { getLatestView } from "./latest_view.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import { type CursorPage, indexPage, type PageRequest } from "../kv/paging.ts";
import { getManyEntries } from "../kv/get_many.ts";
import {
  latestChoiceKey,
  latestReleaseKey,
  projectKey,
  releaseByProjectKey,
  releaseDownloadsKey,
  releaseKey,
  releasesByProjectPrefix,
  releasesByTimePrefix,
  releasesPrefix,
} from "../kv/keys.ts";
import type { Project } from "../projects/types.ts";
import type { Release, ReleaseState } from "./types.ts";
import { requireText, requireTime, safeContentType, safeFilename } from "../projects/validate.ts";
import { addReleaseEvents } from "./release_events.ts";
import type { Store } from "../kv/store.ts";

export interface ReleaseInput {
  project_id: number;
  version: string;
  build?: string;
  release_notes?: string;
  filename: string;
  content_type?: string;
  /** Facts of the stored artifact, from `saveArtifact`. */
  storage_key: string;
  checksum_sha256: string;
  /** SHA-512 (base64), computed with the SHA-256 in the same pass. */
  checksum_sha512?: string;
  size_bytes: number;
  /** Updater signatures (src/feeds/signatures.ts checks their form), stored when given. */
  tauri_signature?: string;
  sparkle_signature?: string;
  /** Upload time; defaults to now. Set by tests and restores. Stored as `toISOString()`. */
  created_at?: string;
  /** Store it as a draft: invisible to clients, the latest pointer untouched. */
  draft?: boolean;
  /**
   * False: the upload does not become latest; the current latest stays, as the
   * chosen one. Default true: the rule as always (the newest active upload).
   */
  make_latest?: boolean;
}

/** The admin-entered text of a release and its limits (at upload and in an edit). */
const RELEASE_TEXT_LIMITS = {
  version: { min: 1, max: VERSION_MAX_LENGTH },
  build: { max: VERSION_MAX_LENGTH },
  release_notes: { max: RELEASE_NOTES_MAX_LENGTH },
} as const;

type ReleaseText = Record<keyof typeof RELEASE_TEXT_LIMITS, string>;

/** Checks the admin-entered fields of a release before any bytes are stored. */
export function validateReleaseFields(input: Partial<ReleaseText>): ReleaseText {
  return {
    version: releaseText("version", input.version),
    build: releaseText("build", input.build),
    release_notes: releaseText("release_notes", input.release_notes),
  };
}

/** The fields of `input` that are given, checked as at upload (an edit leaves the others). */
export function validateGivenReleaseFields(input: Partial<ReleaseText>): Partial<ReleaseText> {
  const fields: Partial<ReleaseText> = {};
  for (const field of Object.keys(RELEASE_TEXT_LIMITS) as (keyof ReleaseText)[]) {
    const value = input[field];
    if (value !== undefined) fields[field] = releaseText(field, value);
  }
  return fields;
}

/**
 * One field of a release's text, checked against its limit. Line breaks are
 * stored as `\n`: a browser's form sends `\r\n` (and old Macs `\r`), and
 * every way in (form, publishing API, edit) comes through here.
 */
function releaseText(field: keyof ReleaseText, value: string | undefined): string {
  return requireText(field, value?.replace(/\r\n?/g, "\n"), RELEASE_TEXT_LIMITS[field]);
}

/**
 * Versions that more than one active release carries. Uploading the same
 * version twice is allowed (a rebuilt artifact); the page warns about it,
 * since clients get only the newest of them.
 */
export function duplicateActiveVersions(releases: readonly Release[]): string[] {
  const seen = new Map<string, number>();
  for (const release of releases) {
    if (release.state === "active") seen.set(release.version, (seen.get(release.version) ?? 0) + 1);
  }
  return [...seen].filter(([, count]) => count > 1).map(([version]) => version);
}

/** Orders releases for "latest": greater `created_at` first, ties by greater id. */
export function isNewerRelease(a: Release, b: Release): boolean {
  if (a.created_at !== b.created_at) return a.created_at > b.created_at;
  return a.id > b.id;
}

/** The checked fields of a new release, without what its commit gives it (id, project, state). */
export type PreparedRelease =
  & Omit<Release, "id" | "project_id" | "state" | "created_at">
  & { created_at: string | undefined };

/** Checks a release's input; `created_at` stays undefined for "now". */
export function prepareRelease(input: Omit<ReleaseInput, "project_id">): PreparedRelease {
  return {
    ...validateReleaseFields(input),
    filename: safeFilename(input.filename),
    content_type: safeContentType(input.content_type),
    checksum_sha256: input.checksum_sha256,
    ...optionalText("checksum_sha512", input.checksum_sha512, SHA512_BASE64),
    ...optionalText("tauri_signature", input.tauri_signature, SIGNATURE_TEXT),
    ...optionalText("sparkle_signature", input.sparkle_signature, SIGNATURE_TEXT),
    size_bytes: input.size_bytes,
    storage_key: input.storage_key,
    created_at: input.created_at === undefined
      ? undefined
      : requireTime("created_at", input.created_at),
  };
}

/** A SHA-512 in base64: 64 bytes. */
const SHA512_BASE64 = /^[A-Za-z0-9+/]{86}==$/;
/** A signature as stored: base64 text of bounded length (a minisign `.sig` is under 1 KiB). */
const SIGNATURE_TEXT = /^[A-Za-z0-9+/]{1,4096}={0,2}$/;

/** `{ [field]: value }` when the optional `value` is given and of the right form; else nothing. */
function optionalText(
  field: "checksum_sha512" | "tauri_signature" | "sparkle_signature",
  value: string | undefined,
  form: RegExp,
): Partial<Record<typeof field, string>> {
  if (value === undefined || value === "") return {};
  if (!form.test(value)) throw new ValidationError(field, `${field} is not in the expected form`);
  return { [field]: value };
}

/**
 * Records the SHA-512 (base64) of a release stored before uploads computed it
 * (the feeds' backfill, src/feeds/backfill.ts). False when the release is
 * gone, moved to another file or already has one.
 */
export async function setReleaseSha512(
  store: Store,
  release: Pick<Release, "id" | "storage_key">,
  sha512: string,
): Promise<boolean> {
  if (!SHA512_BASE64.test(sha512)) throw new ValidationError("checksum_sha512", "not a SHA-512");
  return await keepChecksum(store, release, { field: "checksum_sha512", value: sha512 });
}

/**
 * Records the SHA-1 (hex) of a release's artifact (Squirrel.Windows' `RELEASES`,
 * src/feeds/squirrel.ts). False when the release is gone, moved to another
 * file or already has one.
 */
export async function setReleaseSha1(
  store: Store,
  release: Pick<Release, "id" | "storage_key">,
  sha1: string,
): Promise<boolean> {
  if (!/^[0-9a-f]{40}$/.test(sha1)) throw new ValidationError("checksum_sha1", "not a SHA-1");
  return await keepChecksum(store, release, { field: "checksum_sha1", value: sha1 });
}

/**
 * Records a checksum of the artifact computed after the upload (its form
 * checked by the caller). False when the release is gone, moved to another
 * file or already has one.
 */
async function keepChecksum(
  store: Store,
  release: Pick<Release, "id" | "storage_key">,
  { field, value }: { field: "checksum_sha512" | "checksum_sha1"; value: string },
): Promise<boolean> {
  return await commitChange(store, async () => {
    const entry = await store.kv.get<Release>(releaseKey(release.id));
    const current = entry.value;
    if (
      current === null || current.storage_key !== release.storage_key ||
      current[field] !== undefined
    ) {
      return { commit: NOTHING_TO_WRITE, value: false, changed: [] };
    }
    const changed = [["release", current.id], ["latest_release", current.project_id]] as const;
    const commit = await changeOp(store, changed).check(entry)
      .set(releaseKey(current.id), { ...current, [field]: value }).commit();
    return { commit, value: true, changed };
  });
}

/**
 * Records a release of an existing project (active, or a draft) and moves the
 * latest pointer: a new active upload that is newer than the latest becomes
 * latest and ends a choice (the rule of `pickLatest`), unless it asks not to
 * (`make_latest: false`), which keeps the current latest as the chosen one.
 */
export async function createRelease(store: Store, input: ReleaseInput): Promise<Release> {
  return (await writeNewRelease(store, input, { stage: false })).release;
}

/**
 * Records an active release that a staged rollout is to offer over the
 * current latest (recordUpload, src/storage/upload.ts): when the project has
 * a latest release at the commit, the upload does not become latest (as
 * with `make_latest: false`) and `staged` is true; without one it is
 * recorded as any upload (`staged` false). Decided in the commit, so a
 * latest made or removed just before is seen.
 */
export async function createStagedRelease(
  store: Store,
  input: ReleaseInput,
): Promise<{ release: Release; staged: boolean }> {
  return await writeNewRelease(store, input, { stage: true });
}

async function writeNewRelease(
  store: Store,
  input: ReleaseInput,
  { stage }: { stage: boolean },
): Promise<{ release: Release; staged: boolean }> {
  const fields = prepareRelease(input);
  const draft = input.draft === true;
  let id: number | undefined;
  return await serializedProjectWrite(
    store,
    input.project_id,
    () =>
      commitChange(store, async () => {
        const [projectEntry, latestEntry, choiceEntry] = await Promise.all([
          store.kv.get<Project>(projectKey(input.project_id)),
          store.kv.get<number | null>(latestReleaseKey(input.project_id)),
          store.kv.get<number>(latestChoiceKey(input.project_id)),
        ]);
        if (projectEntry.value === null) throw new ValidationError("project", "project not found");
        // Taken once, when the release can be made: a refused one leaves no trace.
        const newId = id ??= await takeIds(store, "releases");
        const release: Release = {
          ...fields,
          id: newId,
          project_id: input.project_id,
          created_at: fields.created_at ?? now(),
          state: draft ? "draft" : "active",
        };
        const current = latestEntry.value === null
          ? null
          : (await store.kv.get<Release>(releaseKey(latestEntry.value))).value;
        const staged = stage && !draft && input.make_latest !== false && current !== null;
        const makeLatest = input.make_latest !== false && !staged;
        let latestId = current?.id ?? null;
        let choice = choiceEntry.value;
        if (!draft && makeLatest && (current === null || isNewerRelease(release, current))) {
          latestId = release.id;
          choice = null;
        } else if (!draft && !makeLatest && current !== null) {
          choice = current.id;
        }
        const changed = [["latest_release", release.project_id]] as const;
        const op = changeOp(store, changed)
          .check(projectEntry, latestEntry, choiceEntry)
          .set(releaseKey(release.id), release)
          .set(releaseByProjectKey(release.project_id, release.id), release.id)
          .set(latestReleaseKey(release.project_id), latestId);
        setChoice(op, release.project_id, choice);
        addReleaseEvents(op, null, release);
        const commit = await releaseAggregates(op, null, release).commit();
        return { commit, value: { release, staged }, changed };
      }),
  );
}

function setChoice(op: Deno.AtomicOperation, projectId: number, choice: number | null): void {
  if (choice === null) op.delete(latestChoiceKey(projectId));
  else op.set(latestChoiceKey(projectId), choice);
}

/**
 * The latest pointer's rule: the chosen release while it is active, else the
 * newest active one (greatest `created_at`, ties by greater id), else none.
 */
export function pickLatest(releases: readonly Release[], choice: number | null): Release | null {
  let newest: Release | null = null;
  for (const release of releases) {
    if (release.state !== "active") continue;
    if (release.id === choice) return release;
    if (newest === null || isNewerRelease(release, newest)) newest = release;
  }
  return newest;
}

/** The release chosen as latest, or null when the newest active one is latest. */
export async function getLatestChoice(store: Store, projectId: number): Promise<number | null> {
  return (await store.kv.get<number>(latestChoiceKey(projectId))).value;
}

export function getRelease(store: Store, id: number): MaybeAsync<Release | null> {
  return cachedRead(store, {
    name: "release",
    id: id,
    load: async () => (await store.kv.get<Release>(releaseKey(id))).value,
  });
}

/**
 * The latest active release of a project, or null when it has none: the
 * latest pointer's, whatever a staged rollout offers some clients
 * (`getLatestView`, latest_view.ts).
 */
export function getLatestRelease(store: Store, projectId: number): MaybeAsync<Release | null> {
  return thenRead(getLatestView(store, projectId), (view) => view.release);
}

/** Up to `limit` releases of any project with ids above `afterId`, by id. */
export async function listReleasesAfter(
  store: Store,
  afterId: number,
  limit: number,
): Promise<Release[]> {
  const releases: Release[] = [];
  for await (
    const entry of store.kv.list<Release>({
      start: releaseKey(afterId + 1),
      end: [...releasesPrefix(), Number.MAX_SAFE_INTEGER],
    }, { limit })
  ) releases.push(entry.value);
  return releases;
}

/** Every release of a project in every state, newest first. */
export async function listReleasesByProject(
  store: Store,
  projectId: number,
  limit?: number,
): Promise<Release[]> {
  const ids: number[] = [];
  for await (
    const entry of store.kv.list<number>({ prefix: releasesByProjectPrefix(projectId) }, {
      reverse: true,
      limit,
    })
  ) {
    ids.push(entry.value);
  }
  const entries = await getManyEntries<Release>(store.kv, ids.map(releaseKey));
  return entries.flatMap((entry) => entry.value === null ? [] : [entry.value]);
}

/** One page of a project's releases in every state, newest id first (see paging.ts). */
export function listReleasesPage(
  store: Store,
  projectId: number,
  request: PageRequest<Release>,
): Promise<CursorPage<Release>> {
  return indexPage<Release>(store.kv, {
    ...request,
    parts: ["number"],
    prefix: releasesByProjectPrefix(projectId),
    reverse: true,
    recordKey: releaseKey,
  });
}

/**
 * The newest active release of a project ("latest" order: `created_at`, then
 * id), with `changed` standing in for its stored version: a reverse read of
 * the project's `releases_by_time` index that stops at the first active one
 * (its records read a few at a time). Before the aggregates are built
 * (aggregates.ts), every release of the project is read instead.
 */
export async function findNewestActiveRelease(
  store: Store,
  projectId: number,
  changed?: Release,
): Promise<Release | null> {
  const current = (release: Release) => release.id === changed?.id ? changed : release;
  if (!await aggregatesReady(store)) {
    return pickLatest((await listReleasesByProject(store, projectId)).map(current), null);
  }
  // A changed release that became active may be the newest: it is in the index like the rest.
  return await findInReleaseIndex(store, {
    prefix: releasesByTimePrefix(projectId),
    batch: 16,
    pick: (release) => current(release).state === "active" ? current(release) : null,
  });
}

/**
 * The first release that `pick` takes (what it returns) in the reverse order
 * of the release-id index under `prefix`, or null: the index read `batch`
 * entries at a time, their records with one read each batch, stopping at
 * the first release taken.
 */
export async function findInReleaseIndex(
  store: Store,
  { prefix, batch, pick }: {
    prefix: Deno.KvKey;
    batch: number;
    pick: (release: Release) => Release | null;
  },
): Promise<Release | null> {
  let ids: number[] = [];
  const scan = async (): Promise<Release | null> => {
    const entries = await getManyEntries<Release>(store.kv, ids.map(releaseKey));
    ids = [];
    for (const { value } of entries) {
      const picked = value === null ? null : pick(value);
      if (picked !== null) return picked;
    }
    return null;
  };
  for await (
    const entry of store.kv.list<number>({ prefix }, { reverse: true, batchSize: batch })
  ) {
    ids.push(entry.value);
    if (ids.length === batch) {
      const found = await scan();
      if (found !== null) return found;
    }
  }
  return ids.length > 0 ? await scan() : null;
}

/**
 * Archives, re-activates or publishes a release and recomputes the project's
 * latest pointer in the same commit (`pickLatest`'s rule; the pointer's
 * versionstamp is checked, so a concurrent change of another release of the
 * project forces a retry). Archiving the chosen latest ends the choice: the
 * newest active release is latest again. Activating a draft publishes it
 * (`publishDraft`). Only what the pointer needs is read: the chosen release,
 * and the newest active one from the `releases_by_time` index
 * (`findNewestActiveRelease`), which stops at the first active entry.
 */
export async function setReleaseState(
  store: Store,
  id: number,
  state: ReleaseState,
): Promise<Release> {
  return await changeRelease(store, { id, state, makeLatest: true });
}

/**
 * Publishes a draft: it becomes active and, unless `makeLatest` is false,
 * latest (chosen, when a newer release is active). With `makeLatest: false`
 * the current latest stays, as the chosen one. A release that is not a draft
 * is simply made active.
 */
export async function publishDraft(
  store: Store,
  id: number,
  { makeLatest }: { makeLatest: boolean },
): Promise<Release> {
  return await changeRelease(store, { id, state: "active", makeLatest });
}

/** Makes an active release the chosen latest; a draft or archived one is refused. */
export async function makeReleaseLatest(store: Store, id: number): Promise<Release> {
  return await changeRelease(store, { id, state: "active", makeLatest: true, choose: true });
}

/** A release that is not active cannot be made latest. */
export class NotActiveError extends Error {
  constructor(readonly state: ReleaseState) {
    super(`the release is ${state}: only an active release can be made latest`);
    this.name = "NotActiveError";
  }
}

async function changeRelease(
  store: Store,
  { id, state, makeLatest, choose = false }: {
    id: number;
    state: ReleaseState;
    makeLatest: boolean;
    /** Make it the chosen latest (it must be active already). */
    choose?: boolean;
  },
): Promise<Release> {
  const first = (await store.kv.get<Release>(releaseKey(id))).value;
  if (first === null) throw new NotFoundError("release not found");
  return await serializedProjectWrite(
    store,
    first.project_id,
    () =>
      commitChange(store, async () => {
        const entry = await store.kv.get<Release>(releaseKey(id));
        if (entry.value === null) throw new NotFoundError("release not found");
        const write = await planReleaseChange(store, entry, { state, makeLatest, choose });
        const changed = [["release", id], ["latest_release", entry.value.project_id]] as const;
        const commit = await write(changeOp(store, changed)).commit();
        return { commit, value: write.release, changed };
      }),
  );
}

/** The writes of a release change, added to (and checked in) an atomic operation; `release` is the result. */
export interface ReleaseChangeWrite {
  (op: Deno.AtomicOperation): Deno.AtomicOperation;
  release: Release;
}

/**
 * Reads what a change of release `entry` to `state` needs (the latest
 * pointer, the chosen latest, the newest active release) and returns the
 * writes that make it, with their checks, for one commit: the release, the
 * latest pointer and choice, its webhook events and counts. `choose` makes
 * it the chosen latest (a NotActiveError when it is not active).
 */
export async function planReleaseChange(
  store: Store,
  entry: Deno.KvEntry<Release>,
  { state, makeLatest, choose = false }: {
    state: ReleaseState;
    makeLatest: boolean;
    choose?: boolean;
  },
): Promise<ReleaseChangeWrite> {
  const id = entry.value.id;
  if (choose && entry.value.state !== "active") throw new NotActiveError(entry.value.state);
  const projectId = entry.value.project_id;
  const release: Release = { ...entry.value, state };
  const [latestEntry, choiceEntry] = await Promise.all([
    store.kv.get<number | null>(latestReleaseKey(projectId)),
    store.kv.get<number>(latestChoiceKey(projectId)),
  ]);
  // Scanned at most once per attempt: choosing and the pointer may both ask.
  let newestScan: Promise<Release | null> | undefined;
  const newest = () => newestScan ??= findNewestActiveRelease(store, projectId, release);
  let choice = choiceEntry.value;
  if (state !== "active" && choice === id) choice = null;
  const publishing = entry.value.state === "draft" && state === "active";
  if (choose || (publishing && makeLatest)) {
    // Chosen, unless the rule picks it anyway.
    choice = (await newest())?.id === id ? null : id;
  } else if (publishing && choice === null && latestEntry.value !== null) {
    choice = latestEntry.value; // published without becoming latest: the latest stays
  }
  // The chosen release while it is active, else the newest active one (`pickLatest`).
  const chosen = choice === null
    ? null
    : choice === id
    ? release
    : (await store.kv.get<Release>(releaseKey(choice))).value;
  if (chosen?.state !== "active") choice = null;
  const latest = chosen?.state === "active" ? chosen : await newest();
  const write = (op: Deno.AtomicOperation) => {
    op.check(entry, latestEntry, choiceEntry)
      .set(releaseKey(id), release)
      .set(latestReleaseKey(projectId), latest?.id ?? null);
    setChoice(op, projectId, choice);
    addReleaseEvents(op, entry.value, release);
    return releaseAggregates(op, entry.value, release);
  };
  return Object.assign(write, { release });
}

/** Download counts of many releases, by release id. */
export async function getDownloadCounts(
  store: Store,
  releaseIds: readonly number[],
): Promise<Map<number, number>> {
  const entries = await getManyEntries<Deno.KvU64>(store.kv, releaseIds.map(releaseDownloadsKey));
  return new Map(releaseIds.map((id, i) => [id, Number(entries[i].value?.value ?? 0n)]));
}

/** Every release of every project, in any state, by id. */
export async function* listAllReleases(store: Store): AsyncGenerator<Release> {
  for await (const entry of store.kv.list<Release>({ prefix: releasesPrefix() })) yield entry.value;
}

/**
 * The storage key of every release, in any state, and of their Sparkle deltas
 * (sparkle_deltas.ts), Squirrel.Windows deltas (squirrel_deltas.ts), Velopack deltas (velopack.ts) and artifact patches
 * (artifact_patches.ts): the artifacts the storage sweep must keep.
 */
export async function listStorageKeys(store: Store): Promise<Set<string>> {
  const keys = new Set<string>();
  const ids = new Set<number>();
  for await (const release of listAllReleases(store)) {
    keys.add(release.storage_key);
    ids.add(release.id);
  }
  for await (const delta of listAllSparkleDeltas(store)) {
    if (ids.has(delta.release_id)) keys.add(delta.storage_key);
  }
  for await (const delta of listAllSquirrelDeltas(store)) {
    if (ids.has(delta.release_id)) keys.add(delta.storage_key);
  }
  for await (const delta of listAllVelopackDeltas(store)) {
    if (ids.has(delta.release_id)) keys.add(delta.storage_key);
  }
  for await (const patch of listAllArtifactPatches(store)) {
    if (ids.has(patch.release_id)) keys.add(patch.storage_key);
  }
  return keys;
}

/**
 * When each project's newest release (any state) was made: the last entry of
 * its `releases_by_time` index (one short read each); null when it has none.
 */
export async function getNewestReleaseTimes(
  store: Store,
  projectIds: readonly number[],
): Promise<Map<number, string | null>> {
  const times = await Promise.all(projectIds.map(async (id) => {
    for await (
      const entry of store.kv.list<number>({ prefix: releasesByTimePrefix(id) }, {
        reverse: true,
        limit: 1,
      })
    ) {
      return String(entry.key[2]);
    }
    return null;
  }));
  return new Map(projectIds.map((id, i) => [id, times[i]]));
}
