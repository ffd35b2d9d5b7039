/**
 * Deleting releases, keys and projects: the KV side. Each delete is atomic
 * (one commit per release), so a crash leaves a record whole or gone; the
 * artifacts are removed by the caller afterwards (src/lifecycle/delete.ts),
 * and one left by a crash in between is an orphan the storage sweep removes.
 *
 * Kept for the audit: a deleted release's download count moves to its
 * project's `deleted_release_downloads` (the per-day counters stay as they
 * are); a deleted key leaves its id, name and prefix under `deleted_api_keys`
 * and its download total under `key_downloads`.
 */
import { addReleaseEvents } from "../releases/release_events.ts";
import { apiKeyAggregates, projectAggregates, releaseAggregates } from "../projects/aggregates.ts";
import { serializedProjectWrite } from "../kv/atomic.ts";
import { changeOp, commitChange } from "../kv/cache.ts";
import { NotFoundError } from "../kv/errors.ts";
import {
  adoptionClientPrefix,
  adoptionCountPrefix,
  adoptionSketchPrefix,
  apiKeyByHashKey,
  apiKeyKey,
  apiKeyLastUsedKey,
  artifactPatchesPrefix,
  artifactPatchKey,
  deletedApiKeyKey,
  deletedDownloadsKey,
  downloadsByDayPrefix,
  keyDownloadsKey,
  latestChoiceKey,
  latestReleaseKey,
  leaseKey,
  projectBySlugKey,
  projectBytesKey,
  projectKey,
  projectReleaseCountKey,
  releaseByProjectKey,
  releaseDownloadsKey,
  releaseKey,
  releasePolicyKey,
  releasesByProjectPrefix,
  retentionPolicyKey,
  retentionRunKey,
  rolloutGateChangesPrefix,
  rolloutGatesKey,
  rolloutKey,
  velopackDeltaKey,
  velopackDeltasPrefix,
  velopackPackageKey,
  velopackSettingsKey,
} from "../kv/keys.ts";
import { findNewestActiveRelease, listReleasesByProject } from "../releases/releases.ts";
import { retentionRunLease } from "./retention_records.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Release, ReleaseState } from "../releases/types.ts";
import { getManyEntries } from "../kv/get_many.ts";
import type { Store } from "../kv/store.ts";
import { MAX_DELTAS_KEPT } from "../velopack/settings.ts";

/** The release is the one clients get as latest; deleting it needs a confirmation. */
export class LatestReleaseError extends Error {
  constructor(readonly release: Release) {
    super(`release ${release.version} is the latest release of its project`);
    this.name = "LatestReleaseError";
  }
}

/** The project still has active releases: archive or delete them first. */
export class ProjectNotEmptyError extends Error {
  constructor(readonly activeReleases: number) {
    super(`the project has ${activeReleases} active release${activeReleases === 1 ? "" : "s"}`);
    this.name = "ProjectNotEmptyError";
  }
}

/** The release is no longer in the state the delete expected (see `expectState`). */
export class ReleaseStateChangedError extends Error {
  constructor(readonly release: Release) {
    super(`release ${release.version} is ${release.state} now`);
    this.name = "ReleaseStateChangedError";
  }
}

/** What a release delete hands back: the record, and its downloads moved to the project's total. */
export interface DeletedRelease {
  release: Release;
  downloads: number;
}

/**
 * The keys of the server-made deltas and patches (velopack.ts, artifact_patches.ts) built to
 * release `id` and of those built from it: the latter sit under the project's newer releases,
 * of which only the next 4·(most deltas kept)+1 can have one from it (background.ts picks its
 * bases among as many).
 */
async function builtDeltaKeys(store: Store, projectId: number, id: number): Promise<Deno.KvKey[]> {
  const keys: Deno.KvKey[] = [];
  for (const prefix of [velopackDeltasPrefix(id), artifactPatchesPrefix(id)]) {
    for await (const entry of store.kv.list({ prefix })) keys.push(entry.key);
  }
  const newer: number[] = [];
  const prefix = releasesByProjectPrefix(projectId);
  for await (
    const entry of store.kv.list<number>({
      start: [...prefix, id + 1],
      end: [...prefix, Number.MAX_SAFE_INTEGER],
    }, {
      limit: 4 * MAX_DELTAS_KEPT + 1,
    })
  ) newer.push(entry.value);
  const candidates = newer.flatMap((to) => [velopackDeltaKey(to, id), artifactPatchKey(to, id)]);
  const found = await getManyEntries(store.kv, candidates);
  for (const entry of found) if (entry.versionstamp !== null) keys.push(entry.key);
  return keys;
}

/**
 * Deletes a release's record, its index entry and its download total (moved
 * to the project's deleted-release total) in one commit; when it is the
 * latest, the next newest active release becomes latest (only with
 * `allowLatest`, else {@link LatestReleaseError}). With `expectState`, a
 * release in another state is left alone ({@link ReleaseStateChangedError}).
 * The artifact is the caller's.
 */
export async function deleteReleaseRecord(
  store: Store,
  id: number,
  { allowLatest = false, expectState }: { allowLatest?: boolean; expectState?: ReleaseState } = {},
): Promise<DeletedRelease> {
  const first = (await store.kv.get<Release>(releaseKey(id))).value;
  if (first === null) throw new NotFoundError("release not found");
  const projectId = first.project_id;
  return await serializedProjectWrite(store, projectId, () =>
    commitChange(store, async () => {
      const [entry, latestEntry, countEntry, choiceEntry] = await Promise.all([
        store.kv.get<Release>(releaseKey(id)),
        store.kv.get<number | null>(latestReleaseKey(projectId)),
        store.kv.get<Deno.KvU64>(releaseDownloadsKey(id)),
        store.kv.get<number>(latestChoiceKey(projectId)),
      ]);
      const built = await builtDeltaKeys(store, projectId, id);
      const release = entry.value;
      if (release === null) throw new NotFoundError("release not found");
      if (expectState !== undefined && release.state !== expectState) {
        throw new ReleaseStateChangedError(release);
      }
      let latestId = latestEntry.value;
      if (latestId === id) {
        if (!allowLatest) throw new LatestReleaseError(release);
        // The latest goes: the newest active one of the rest (a choice of it ends with it).
        const gone: Release = { ...release, state: "archived" };
        latestId = (await findNewestActiveRelease(store, projectId, gone))?.id ?? null;
      }
      const downloads = countEntry.value?.value ?? 0n;
      const changed = [["release", id], ["latest_release", projectId]] as const;
      const op = changeOp(store, changed)
        .check(entry, latestEntry, countEntry, choiceEntry)
        .delete(releaseKey(id))
        .delete(releaseByProjectKey(projectId, id))
        .delete(releaseDownloadsKey(id))
        .delete(velopackPackageKey(id))
        .sum(deletedDownloadsKey(projectId), downloads)
        .set(latestReleaseKey(projectId), latestId);
      if (choiceEntry.value === id) op.delete(latestChoiceKey(projectId));
      for (const key of built) op.delete(key);
      addReleaseEvents(op, release, null);
      const commit = await releaseAggregates(op, release, null).commit();
      return { commit, value: { release, downloads: Number(downloads) }, changed };
    }));
}

/** Downloads of a project's deleted releases. */
export async function getDeletedDownloads(store: Store, projectId: number): Promise<number> {
  return Number(
    (await store.kv.get<Deno.KvU64>(deletedDownloadsKey(projectId))).value?.value ?? 0n,
  );
}

/** What stays of a deleted key: enough to name it in the audit log and the download statistics. */
export interface DeletedApiKey {
  id: number;
  name: string;
  prefix: string;
  deleted_at: string;
}

/**
 * Deletes a key: its record, its hash index and its last-use entry go in one
 * commit (the key is refused from the next request here, within the read
 * cache's bound elsewhere); its id, name and prefix stay under
 * `deleted_api_keys`, its download total under `key_downloads`.
 */
export async function deleteApiKey(store: Store, id: number): Promise<ApiKey> {
  return await commitChange(store, async () => {
    const entry = await store.kv.get<ApiKey>(apiKeyKey(id));
    const key = entry.value;
    if (key === null) throw new NotFoundError("api key not found");
    const kept: DeletedApiKey = {
      id,
      name: key.name,
      prefix: key.prefix,
      deleted_at: new Date().toISOString(),
    };
    const changed = [["api_key_by_hash", key.hash]] as const;
    const op = changeOp(store, changed)
      .check(entry)
      .delete(apiKeyKey(id))
      .delete(apiKeyByHashKey(key.hash))
      .delete(apiKeyLastUsedKey(id))
      .set(deletedApiKeyKey(id), kept);
    const commit = await apiKeyAggregates(op, key, null).commit();
    return { commit, value: key, changed };
  });
}

/** The kept names of deleted keys, by id (for statistics of keys that are gone). */
export async function getDeletedApiKeys(
  store: Store,
  ids: readonly number[],
): Promise<Map<number, DeletedApiKey>> {
  const entries = await getManyEntries<DeletedApiKey>(store.kv, ids.map(deletedApiKeyKey));
  return new Map(entries.flatMap((entry, i) => entry.value ? [[ids[i], entry.value]] : []));
}

/** Releases deleted per commit when a project goes. */
const RELEASES_PER_COMMIT = 50;
/** Entries of the project's own bookkeeping (adoption, per-day downloads) deleted per commit. */
const ENTRIES_PER_COMMIT = 500;

/**
 * The prefixes of a project's bookkeeping that can hold many entries (one
 * per client, or per release and day): deleted in batches before the project.
 */
function projectEntryPrefixes(projectId: number): Deno.KvKey[] {
  return [
    adoptionClientPrefix(projectId),
    adoptionCountPrefix(projectId),
    adoptionSketchPrefix(projectId),
    downloadsByDayPrefix(["project", projectId]),
    rolloutGateChangesPrefix(projectId),
  ];
}

/** Up to `limit` keys under the project's bookkeeping prefixes. */
async function listProjectEntryKeys(
  store: Store,
  projectId: number,
  limit: number,
): Promise<Deno.KvKey[]> {
  const keys: Deno.KvKey[] = [];
  for (const prefix of projectEntryPrefixes(projectId)) {
    const iterator = store.kv.list({ prefix }, { limit: limit - keys.length });
    for await (const entry of iterator) keys.push(entry.key);
    if (keys.length >= limit) break;
  }
  return keys;
}

/**
 * Deletes a project that has no active releases: its archived releases in
 * commits of up to 50 (each commit checks and rewrites the latest pointer, so
 * an upload in between is seen), then its adoption records, per-day
 * download counters and gate change counts in commits of up to 500, then the
 * project, its slug, its pointer, its rollout, its gates, its release policy
 * and its other single entries. A crash in between
 * leaves the project with less of it, which a second delete finishes. Hands
 * back the project and the deleted releases, whose artifacts are the
 * caller's to remove.
 */
export async function deleteProjectRecords(
  store: Store,
  id: number,
): Promise<{ project: Project; releases: Release[] }> {
  const deleted: Release[] = [];
  // Every release is read once, to see that none is active; after a batch
  // committed, the next reads only its own. A release written in between
  // (an upload, an activation) rewrites the latest pointer, which every commit
  // checks: a commit that fails reads every release again.
  let noneActive = false;
  return await serializedProjectWrite(store, id, async () => {
    for (;;) {
      const done = await commitChange(store, async () => {
        const [projectEntry, latestEntry] = await Promise.all([
          store.kv.get<Project>(projectKey(id)),
          store.kv.get<number | null>(latestReleaseKey(id)),
        ]);
        const project = projectEntry.value;
        if (project === null) throw new NotFoundError("project not found");
        const releases = await listReleasesByProject(
          store,
          id,
          noneActive ? RELEASES_PER_COMMIT : undefined,
        );
        if (!noneActive) {
          const active = releases.filter((release) => release.state === "active").length;
          if (active > 0) throw new ProjectNotEmptyError(active);
        }
        if (releases.length === 0) {
          const keys = await listProjectEntryKeys(store, id, ENTRIES_PER_COMMIT);
          if (keys.length > 0) {
            // Not cached anywhere (read straight from the KV): no change record needed.
            const op = store.kv.atomic().check(projectEntry, latestEntry);
            for (const key of keys) op.delete(key);
            const commit = await op.commit();
            noneActive = commit.ok;
            return { commit, value: null, changed: [] };
          }
          const changed = [
            ["project", id],
            ["project_by_slug", project.slug],
            ["project_list"],
            ["latest_release", id],
          ] as const;
          const op = changeOp(store, changed)
            .check(projectEntry, latestEntry)
            .delete(projectKey(id))
            .delete(projectBySlugKey(project.slug))
            .delete(latestReleaseKey(id))
            .delete(latestChoiceKey(id))
            .delete(deletedDownloadsKey(id))
            .delete(retentionPolicyKey(id))
            .delete(retentionRunKey(id))
            .delete(leaseKey(retentionRunLease(id)))
            .delete(rolloutKey(id))
            .delete(rolloutGatesKey(id))
            .delete(releasePolicyKey(id))
            .delete(velopackSettingsKey(id))
            .delete(projectReleaseCountKey(id))
            .delete(projectBytesKey(id));
          const commit = await projectAggregates(op, project, null).commit();
          noneActive = commit.ok;
          return { commit, value: project, changed };
        }
        const batch = releases.slice(0, RELEASES_PER_COMMIT);
        const changed = [
          ["latest_release", id],
          ...batch.map((release) => ["release", release.id] as const),
        ] as const;
        let op = changeOp(store, changed).check(projectEntry, latestEntry).set(
          latestReleaseKey(id),
          null,
        );
        for (const release of batch) {
          op = op.delete(releaseKey(release.id))
            .delete(releaseByProjectKey(id, release.id))
            .delete(releaseDownloadsKey(release.id));
          releaseAggregates(op, release, null);
        }
        const commit = await op.commit();
        noneActive = commit.ok;
        if (commit.ok) deleted.push(...batch);
        return { commit, value: null, changed };
      });
      if (done !== null) return { project: done, releases: deleted };
    }
  });
}

/** Downloads made with a key (kept after the key is deleted). */
export async function getKeyDownloads(store: Store, keyId: number): Promise<number> {
  return Number((await store.kv.get<Deno.KvU64>(keyDownloadsKey(keyId))).value?.value ?? 0n);
}
