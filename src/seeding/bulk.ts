/**
 * Bulk creation of API keys and releases, for seeding large data sets (the
 * benchmark's 100,000 keys and 10,000 releases). The records and the key
 * layout are exactly those of `createApiKey` and `createRelease`; only the
 * commits differ: one atomic commit per batch, which claims a block of ids
 * from the counter at once instead of one id per commit.
 *
 * Every batch checks the counter it bumps (and for releases the project and
 * its latest pointer), so concurrent writers are serialized as usual and a
 * conflicting batch is retried whole.
 */
import { apiKeyAggregates } from "../projects/aggregates.ts";
import { type ApiKeyInput, prepareApiKey } from "../credentials/api_keys.ts";
import { now, takeIds } from "../kv/atomic.ts";
import { changeOp, commitChange } from "../kv/cache.ts";
import { ValidationError } from "../kv/errors.ts";
import {
  apiKeyByHashKey,
  apiKeyKey,
  countKey,
  latestReleaseKey,
  projectBytesKey,
  projectKey,
  projectReleaseCountKey,
  releaseByProjectKey,
  releaseByTimeKey,
  releaseKey,
} from "../kv/keys.ts";
import { isNewerRelease, prepareRelease, type ReleaseInput } from "../releases/releases.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Release } from "../releases/types.ts";
import type { Store } from "../kv/store.ts";

/**
 * Records per commit. A KV commit takes at most 100 checks, 1,000 mutations,
 * 80 KiB of keys and 800 KiB in all: a key is one check (its hash must be
 * unused) and two entries and a count, a release three entries of a few hundred bytes
 * (release notes can make one much larger, hence the modest default).
 */
export const API_KEYS_PER_COMMIT = 90;
export const RELEASES_PER_COMMIT = 200;
const MAX_API_KEYS_PER_COMMIT = 99;
/** Three entries a release (record, id index, time index) and two counts per commit. */
const MAX_RELEASES_PER_COMMIT = 330;

/**
 * `items` in batches of at most `size`; with `bytesOf`, a batch also ends
 * before its estimated bytes pass COMMIT_BYTES (a KV commit takes 800 KiB).
 */
function batches<T>(
  items: readonly T[],
  { size, max, bytesOf }: { size: number; max: number; bytesOf?: (item: T) => number },
): T[][] {
  if (!Number.isInteger(size) || size < 1 || size > max) {
    throw new RangeError(`batch size must be a whole number from 1 to ${max}`);
  }
  const out: T[][] = [];
  let batch: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const itemBytes = bytesOf?.(item) ?? 0;
    if (batch.length === size || (batch.length > 0 && bytes + itemBytes > COMMIT_BYTES)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(item);
    bytes += itemBytes;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

/** What one commit may carry, with room to spare below KV's 800 KiB. */
const COMMIT_BYTES = 600 * 1024;

/** A release's stored size at most: 2 bytes a character of its text, plus the rest. */
function releaseBytes(release: { release_notes: string }): number {
  return 2 * release.release_notes.length + 2048;
}

/**
 * Creates many keys, `batchSize` per commit. Like `createApiKey`, each secret
 * is returned here once and only its hash is stored. Ids are consecutive
 * within a batch and ascending in input order.
 */
export async function createApiKeysBulk(
  store: Store,
  inputs: readonly ApiKeyInput[],
  { batchSize = API_KEYS_PER_COMMIT }: { batchSize?: number } = {},
): Promise<Array<{ apiKey: ApiKey; secret: string }>> {
  const prepared = inputs.map(prepareApiKey);
  const created: Array<{ apiKey: ApiKey; secret: string }> = [];
  for (const batch of batches(prepared, { size: batchSize, max: MAX_API_KEYS_PER_COMMIT })) {
    const first = await takeIds(store, "api_keys", batch.length);
    const done = await commitChange(store, async () => {
      const at = now();
      const changed = [] as const;
      let op = changeOp(store, changed);
      const value = batch.map(({ secret, record }, i) => {
        const apiKey: ApiKey = { id: first + i, ...record, created_at: at };
        op = op
          .check({ key: apiKeyByHashKey(apiKey.hash), versionstamp: null })
          .set(apiKeyKey(apiKey.id), apiKey)
          .set(apiKeyByHashKey(apiKey.hash), apiKey.id);
        apiKeyAggregates(op, null, apiKey);
        return { apiKey, secret };
      });
      return { commit: await op.commit(), value, changed };
    });
    created.push(...done);
  }
  return created;
}

/**
 * Records many active releases of one existing project (`projectId`), `batchSize` per
 * commit, and moves the project's latest pointer like `createRelease` does.
 * The artifacts must already be stored (`storage_key`, checksum and size).
 */
export async function createReleasesBulk(
  store: Store,
  inputs: readonly Omit<ReleaseInput, "project_id">[],
  { projectId, batchSize = RELEASES_PER_COMMIT }: { projectId: number; batchSize?: number },
): Promise<Release[]> {
  const prepared = inputs.map(prepareRelease);
  const created: Release[] = [];
  const limits = { size: batchSize, max: MAX_RELEASES_PER_COMMIT, bytesOf: releaseBytes };
  for (const batch of batches(prepared, limits)) {
    const first = await takeIds(store, "releases", batch.length);
    const done = await commitChange(store, async () => {
      const [projectEntry, latestEntry] = await Promise.all([
        store.kv.get<Project>(projectKey(projectId)),
        store.kv.get<number | null>(latestReleaseKey(projectId)),
      ]);
      if (projectEntry.value === null) throw new ValidationError("project", "project not found");
      let latest = latestEntry.value === null
        ? null
        : (await store.kv.get<Release>(releaseKey(latestEntry.value))).value;
      const at = now();
      const changed = [["latest_release", projectId]] as const;
      let op = changeOp(store, changed).check(projectEntry, latestEntry);
      const value = batch.map((fields, i): Release => {
        const release: Release = {
          ...fields,
          id: first + i,
          project_id: projectId,
          created_at: fields.created_at ?? at,
          state: "active",
        };
        if (latest === null || isNewerRelease(release, latest)) latest = release;
        op = op
          .set(releaseKey(release.id), release)
          .set(releaseByProjectKey(projectId, release.id), release.id)
          .set(releaseByTimeKey(release), release.id);
        return release;
      });
      // The counts once for the batch (a `releaseAggregates` per release would be two more sums each).
      const bytes = value.reduce((sum, release) => sum + release.size_bytes, 0);
      op = op
        .sum(countKey("releases", "active"), BigInt(batch.length))
        .sum(projectReleaseCountKey(projectId), BigInt(batch.length))
        .sum(projectBytesKey(projectId), BigInt(bytes));
      op = op.set(latestReleaseKey(projectId), latest?.id ?? null);
      return { commit: await op.commit(), value, changed };
    });
    created.push(...done);
  }
  return created;
}
