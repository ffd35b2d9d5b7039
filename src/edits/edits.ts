/**
 * Editing releases, keys and projects after they were made, with the version
 * an edit started from: a form carries the record's versionstamp (`version`
 * of {@link Versioned}) and an edit whose record changed since is refused with
 * {@link StaleEditError}, which holds the record as it is now. Without an
 * expected version (outside tools) the edit applies to whatever is stored.
 */
import { apiKeyAggregates, projectAggregates, releaseAggregates } from "../projects/aggregates.ts";
import { DESCRIPTION_MAX_LENGTH, NAME_MAX_LENGTH } from "../lib/limits.ts";
import { type ApiKeyInput, validateKeyFields } from "../credentials/api_keys.ts";
import { now, serializedProjectWrite } from "../kv/atomic.ts";
import { type CacheEntryName, type CachePatch, changeOp, commitChange } from "../kv/cache.ts";
import { projectListPatch } from "../projects/projects.ts";
import { NotFoundError } from "../kv/errors.ts";
import { apiKeyKey, projectKey, releaseKey } from "../kv/keys.ts";
import { validateGivenReleaseFields } from "../releases/releases.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Release } from "../releases/types.ts";
import { requireTags, requireText } from "../projects/validate.ts";
import type { Store } from "../kv/store.ts";

/** A record with the versionstamp of its KV entry: what an edit form carries. */
export interface Versioned<T> {
  value: T;
  version: string;
}

/** The record changed after the edit form was shown; `current` is how it is now. */
export class StaleEditError<T = unknown> extends Error {
  constructor(readonly current: Versioned<T>) {
    super("someone else changed this after the form was shown");
    this.name = "StaleEditError";
  }
}

/** What an edit did: the record before and after, and the new version. */
export interface Edited<T> {
  before: T;
  after: T;
  version: string;
}

async function getVersioned<T>(store: Store, key: Deno.KvKey): Promise<Versioned<T> | null> {
  const entry = await store.kv.get<T>(key);
  return entry.versionstamp === null ? null : { value: entry.value!, version: entry.versionstamp };
}

export function getReleaseVersioned(store: Store, id: number): Promise<Versioned<Release> | null> {
  return getVersioned<Release>(store, releaseKey(id));
}

export function getApiKeyVersioned(store: Store, id: number): Promise<Versioned<ApiKey> | null> {
  return getVersioned<ApiKey>(store, apiKeyKey(id));
}

export function getProjectVersioned(store: Store, id: number): Promise<Versioned<Project> | null> {
  return getVersioned<Project>(store, projectKey(id));
}

/** One edit of one record: read, compare with the expected version, change, commit. */
interface EditPlan<T> {
  key: Deno.KvKey;
  /** The version the form started from; undefined or "" for none. */
  expected?: string;
  notFound: string;
  change: (current: T) => T;
  changed: (after: T) => readonly CacheEntryName[];
  /** Cached entries of `changed` this process brings up to date itself (cache.ts `CachePatch`). */
  patches?: (after: T) => readonly CachePatch[];
  /** Adds the maintained counts and indexes that follow the record (aggregates.ts). */
  aggregates: (op: Deno.AtomicOperation, before: T, after: T) => Deno.AtomicOperation;
}

async function editRecord<T>(store: Store, plan: EditPlan<T>): Promise<Edited<T>> {
  return await commitChange(store, async () => {
    const entry = await store.kv.get<T>(plan.key);
    if (entry.versionstamp === null) throw new NotFoundError(plan.notFound);
    if (plan.expected && plan.expected !== entry.versionstamp) {
      throw new StaleEditError<T>({ value: entry.value, version: entry.versionstamp });
    }
    const after = plan.change(entry.value);
    const changed = plan.changed(after);
    const op = changeOp(store, changed).check(entry).set(plan.key, after);
    const commit = await plan.aggregates(op, entry.value, after).commit();
    const version = commit.ok ? commit.versionstamp : "";
    const patches = plan.patches?.(after);
    return { commit, value: { before: entry.value, after, version }, changed, patches };
  });
}

/** The text of a release that may change after upload; a field left out stays as it is. */
export interface ReleaseEdit {
  version?: string;
  build?: string;
  release_notes?: string;
}

/**
 * Corrects a release's version, build and/or notes (the admin form sends all
 * three, the publishing API those it changes). The file, its checksum and
 * the upload time stay, so the latest pointer (ordered by upload time) does
 * not move; the cached release and latest entry are forgotten everywhere.
 * The latest entry holds the release record too, so the edit runs after the
 * project's other writes in this process, as the pointer's moves do.
 */
export async function editRelease(
  store: Store,
  id: number,
  input: ReleaseEdit & { expected?: string },
): Promise<Edited<Release>> {
  const fields = validateGivenReleaseFields(input);
  const first = (await store.kv.get<Release>(releaseKey(id))).value;
  if (first === null) throw new NotFoundError("release not found");
  return await serializedProjectWrite(store, first.project_id, () =>
    editRecord<Release>(store, {
      key: releaseKey(id),
      expected: input.expected,
      notFound: "release not found",
      change: (release) => ({ ...release, ...fields }),
      changed: (release) => [["release", id], ["latest_release", release.project_id]],
      aggregates: releaseAggregates,
    }));
}

/**
 * Changes a key's name, download right, scope and expiry; its secret, prefix
 * and enabled state stay. The cached lookup by hash is forgotten in this
 * process at once and in others within the read cache's bound.
 */
export async function editApiKey(
  store: Store,
  id: number,
  input: ApiKeyInput & { expected?: string },
): Promise<Edited<ApiKey>> {
  const { name, scopeMode, tags, rolloutTags, projectIds, expiresAt } = validateKeyFields(input);
  return await editRecord<ApiKey>(store, {
    key: apiKeyKey(id),
    expected: input.expected,
    notFound: "api key not found",
    change: (key) => {
      // last_used_at lives in its own entry; never store it in the record.
      const { last_used_at: _, ...stored } = key;
      return {
        ...stored,
        name,
        can_download: input.can_download,
        scope_mode: scopeMode,
        project_ids: projectIds,
        tags,
        ...(rolloutTags === undefined ? {} : { rollout_tags: rolloutTags }),
        expires_at: expiresAt,
      };
    },
    changed: (key) => [["api_key_by_hash", key.hash]],
    aggregates: apiKeyAggregates,
  });
}

export interface ProjectEdit {
  name: string;
  description?: string;
  tags?: readonly string[];
}

/** Edits a project's name, description and tags, refusing a stale form; the slug never changes. */
export async function editProject(
  store: Store,
  id: number,
  input: ProjectEdit & { expected?: string },
): Promise<Edited<Project>> {
  const name = requireText("name", input.name, { min: 1, max: NAME_MAX_LENGTH });
  const description = requireText("description", input.description, {
    max: DESCRIPTION_MAX_LENGTH,
  });
  const tags = requireTags("tags", input.tags ?? []);
  return await editRecord<Project>(store, {
    key: projectKey(id),
    expected: input.expected,
    notFound: "project not found",
    change: (project) => ({ ...project, name, description, tags, updated_at: now() }),
    changed: (project) => [["project", id], ["project_by_slug", project.slug], ["project_list"]],
    patches: (project) => [projectListPatch(project)],
    aggregates: projectAggregates,
  });
}
