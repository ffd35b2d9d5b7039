import { RELEASE_NOTES_MAX_LENGTH, VERSION_MAX_LENGTH } from "../lib/limits.ts";
import { aggregatesReady, releaseAggregates } from "./aggregates.ts";
import { now, serializedProjectWrite, takeIds } from "./atomic.ts";
import { type Cached, cachedRead, changeOp, commitChange } from "./cache.ts";
import { NotFoundError, ValidationError } from "./errors.ts";
import { type CursorPage, cursorPage, type PageRequest } from "./paging.ts";
import { getManyEntries } from "./get_many.ts";
import {
  latestReleaseKey,
  projectKey,
  releaseByProjectKey,
  releaseDownloadsKey,
  releaseKey,
  releasesByProjectPrefix,
  releasesByTimePrefix,
  releasesPrefix,
} from "./keys.ts";
import type { Project, Release, ReleaseState } from "./types.ts";
import { requireText, requireTime, safeContentType, safeFilename } from "./validate.ts";

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
  size_bytes: number;
  /** Upload time; defaults to now. Set by tests and restores. Stored as `toISOString()`. */
  created_at?: string;
}

/** Checks the admin-entered fields of a release before any bytes are stored. */
export function validateReleaseFields(
  input: { version?: string; build?: string; release_notes?: string },
): { version: string; build: string; release_notes: string } {
  return {
    version: requireText("version", input.version, { min: 1, max: VERSION_MAX_LENGTH }),
    build: requireText("build", input.build, { max: VERSION_MAX_LENGTH }),
    release_notes: requireText("release_notes", input.release_notes, {
      max: RELEASE_NOTES_MAX_LENGTH,
    }),
  };
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
    size_bytes: input.size_bytes,
    storage_key: input.storage_key,
    created_at: input.created_at === undefined
      ? undefined
      : requireTime("created_at", input.created_at),
  };
}

/** Records an active release of an existing project and moves the latest pointer when it is newer. */
export async function createRelease(kv: Deno.Kv, input: ReleaseInput): Promise<Release> {
  const fields = prepareRelease(input);
  let id: number | undefined;
  return await serializedProjectWrite(kv, input.project_id, () =>
    commitChange(kv, async () => {
      const [projectEntry, latestEntry] = await Promise.all([
        kv.get<Project>(projectKey(input.project_id)),
        kv.get<number | null>(latestReleaseKey(input.project_id)),
      ]);
      if (projectEntry.value === null) throw new ValidationError("project", "project not found");
      // Taken once, when the release can be made: a refused one leaves no trace.
      const newId = id ??= await takeIds(kv, "releases");
      const release: Release = {
        ...fields,
        id: newId,
        project_id: input.project_id,
        created_at: fields.created_at ?? now(),
        state: "active",
      };
      const current = latestEntry.value === null
        ? null
        : (await kv.get<Release>(releaseKey(latestEntry.value))).value;
      const latestId = current === null || isNewerRelease(release, current)
        ? release.id
        : current.id;
      const changed = [["latest_release", release.project_id]] as const;
      const op = changeOp(kv, changed)
        .check(projectEntry, latestEntry)
        .set(releaseKey(release.id), release)
        .set(releaseByProjectKey(release.project_id, release.id), release.id)
        .set(latestReleaseKey(release.project_id), latestId);
      const commit = await releaseAggregates(op, null, release).commit();
      return { commit, value: release, changed };
    }));
}

export function getRelease(kv: Deno.Kv, id: number): Cached<Release | null> {
  return cachedRead(kv, {
    name: "release",
    id: id,
    load: async () => (await kv.get<Release>(releaseKey(id))).value,
  });
}

/** The latest active release of a project, or null when it has none. */
export function getLatestRelease(kv: Deno.Kv, projectId: number): Cached<Release | null> {
  return cachedRead(kv, {
    name: "latest_release",
    id: projectId,
    load: async () => {
      const id = (await kv.get<number | null>(latestReleaseKey(projectId))).value;
      return id === null ? null : (await kv.get<Release>(releaseKey(id))).value;
    },
  });
}

/** Every release of a project in every state, newest first. */
export async function listReleasesByProject(kv: Deno.Kv, projectId: number): Promise<Release[]> {
  const ids: number[] = [];
  for await (
    const entry of kv.list<number>({ prefix: releasesByProjectPrefix(projectId) }, {
      reverse: true,
    })
  ) {
    ids.push(entry.value);
  }
  const entries = await getManyEntries<Release>(kv, ids.map(releaseKey));
  return entries.flatMap((entry) => entry.value === null ? [] : [entry.value]);
}

/** One page of a project's releases in every state, newest id first (see paging.ts). */
export function listReleasesPage(
  kv: Deno.Kv,
  projectId: number,
  { match, ...request }: PageRequest<Release>,
): Promise<CursorPage<Release>> {
  return cursorPage<number, Release>(kv, {
    ...request,
    parts: ["number"],
    prefix: releasesByProjectPrefix(projectId),
    reverse: true,
    load: async (entries) =>
      (await getManyEntries<Release>(kv, entries.map((entry) => releaseKey(entry.value))))
        .map(({ value }) => value !== null && (match?.(value) ?? true) ? value : null),
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
  kv: Deno.Kv,
  projectId: number,
  changed?: Release,
): Promise<Release | null> {
  const current = (release: Release) => release.id === changed?.id ? changed : release;
  if (!await aggregatesReady(kv)) {
    let latest: Release | null = null;
    for (const release of (await listReleasesByProject(kv, projectId)).map(current)) {
      if (release.state === "active" && (latest === null || isNewerRelease(release, latest))) {
        latest = release;
      }
    }
    return latest;
  }
  let ids: number[] = [];
  const scan = async (): Promise<Release | null> => {
    const entries = await getManyEntries<Release>(kv, ids.map(releaseKey));
    ids = [];
    for (const { value } of entries) {
      if (value !== null && current(value).state === "active") return current(value);
    }
    return null;
  };
  // A changed release that became active may be the newest: it is in the index like the rest.
  for await (
    const entry of kv.list<number>({ prefix: releasesByTimePrefix(projectId) }, {
      reverse: true,
      batchSize: 16,
    })
  ) {
    ids.push(entry.value);
    if (ids.length === 16) {
      const found = await scan();
      if (found !== null) return found;
    }
  }
  return ids.length > 0 ? await scan() : null;
}

/**
 * Archives or re-activates a release and recomputes the project's latest
 * pointer in the same commit (the pointer's versionstamp is checked, so a
 * concurrent change of another release of the project forces a retry). Only
 * what the pointer needs is read: re-activating compares the release with the
 * current latest; archiving the latest looks for the next active one
 * (`findNewestActiveRelease`); archiving another leaves the pointer.
 */
export async function setReleaseState(
  kv: Deno.Kv,
  id: number,
  state: ReleaseState,
): Promise<Release> {
  return await commitChange(kv, async () => {
    const entry = await kv.get<Release>(releaseKey(id));
    if (entry.value === null) throw new NotFoundError("release not found");
    const release: Release = { ...entry.value, state };
    const latestEntry = await kv.get<number | null>(latestReleaseKey(release.project_id));
    const latest = await newLatest(kv, release, latestEntry.value);
    const changed = [["release", id], ["latest_release", release.project_id]] as const;
    const op = changeOp(kv, changed)
      .check(entry, latestEntry)
      .set(releaseKey(id), release)
      .set(latestReleaseKey(release.project_id), latest?.id ?? null);
    const commit = await releaseAggregates(op, entry.value, release).commit();
    return { commit, value: release, changed };
  });
}

/** The project's latest release once `release` (changed) is stored; `latestId` is the pointer now. */
async function newLatest(
  kv: Deno.Kv,
  release: Release,
  latestId: number | null,
): Promise<Release | null> {
  // No pointer: the project had no active release, so this one is the only candidate.
  if (latestId === null) return release.state === "active" ? release : null;
  const pointed = latestId === release.id
    ? null
    : (await kv.get<Release>(releaseKey(latestId))).value;
  if (pointed === null || pointed.state !== "active") {
    return await findNewestActiveRelease(kv, release.project_id, release);
  }
  // The pointer is another active release: it stays unless this one is active and newer.
  return release.state === "active" && isNewerRelease(release, pointed) ? release : pointed;
}

/** Download counts of many releases, by release id. */
export async function getDownloadCounts(
  kv: Deno.Kv,
  releaseIds: readonly number[],
): Promise<Map<number, number>> {
  const entries = await getManyEntries<Deno.KvU64>(kv, releaseIds.map(releaseDownloadsKey));
  return new Map(releaseIds.map((id, i) => [id, Number(entries[i].value?.value ?? 0n)]));
}

/** Every release of every project, in any state, by id. */
export async function* listAllReleases(kv: Deno.Kv): AsyncGenerator<Release> {
  for await (const entry of kv.list<Release>({ prefix: releasesPrefix() })) yield entry.value;
}

/** The storage key of every release, in any state: the artifacts the storage sweep must keep. */
export async function listStorageKeys(kv: Deno.Kv): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const release of listAllReleases(kv)) keys.add(release.storage_key);
  return keys;
}
