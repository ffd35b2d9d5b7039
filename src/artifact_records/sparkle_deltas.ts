/**
 * Sparkle's delta updates of a release (docs/feeds.md "Sparkle deltas"): the
 * `.delta` files the vendor's `BinaryDelta` made, each from one older bundle
 * version to this release, uploaded with the release and signed by the
 * vendor; the appcast lists them under `<sparkle:deltas>`. The files live in
 * the artifact store; the storage sweep keeps those of existing releases
 * (`listStorageKeys` in releases.ts).
 */
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import { releaseKey, sparkleDeltaKey, sparkleDeltasPrefix } from "../kv/keys.ts";
import type { Release } from "../projects/types.ts";
import type { Store } from "../kv/store.ts";

export interface SparkleDelta {
  release_id: number;
  /** Its place among the release's deltas (0, 1, …): the download URL names it. */
  index: number;
  /** The bundle version (`sparkle:version`) the delta applies to. */
  from: string;
  filename: string;
  storage_key: string;
  checksum_sha256: string;
  size_bytes: number;
  /** The vendor's `sparkle:edSignature` of the delta file. */
  sparkle_signature: string;
}

/** Records a release's deltas in one checked commit, while the release exists; false if gone. */
export async function createSparkleDeltas(store: Store, deltas: SparkleDelta[]): Promise<boolean> {
  if (deltas.length === 0) return true;
  const releaseId = deltas[0].release_id;
  return await commitWithRetry(async () => {
    const release = await store.kv.get<Release>(releaseKey(releaseId));
    if (release.value === null) return { commit: NOTHING_TO_WRITE, value: false };
    const op = store.kv.atomic().check(release);
    for (const delta of deltas) op.set(sparkleDeltaKey(releaseId, delta.index), delta);
    return { commit: await op.commit(), value: true };
  });
}

export async function listSparkleDeltasByRelease(
  store: Store,
  releaseId: number,
): Promise<SparkleDelta[]> {
  const deltas: SparkleDelta[] = [];
  for await (
    const entry of store.kv.list<SparkleDelta>({ prefix: sparkleDeltasPrefix(releaseId) })
  ) {
    deltas.push(entry.value);
  }
  return deltas;
}

/** Every delta of every release (the storage sweep keeps those whose release exists). */
export async function* listAllSparkleDeltas(store: Store): AsyncGenerator<SparkleDelta> {
  for await (const entry of store.kv.list<SparkleDelta>({ prefix: sparkleDeltasPrefix() })) {
    yield entry.value;
  }
}
