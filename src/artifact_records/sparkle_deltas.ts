/**
 * Sparkle's delta updates of a release (docs/feeds.md "Sparkle deltas"): the
 * `.delta` files the vendor's `BinaryDelta` made, each from one older bundle
 * version to this release, uploaded with the release and signed by the
 * vendor; the appcast lists them under `<sparkle:deltas>`. The files live in
 * the artifact store; the storage sweep keeps those of existing releases
 * (`listStorageKeys` in releases.ts).
 */
import { sparkleDeltaKey, sparkleDeltasPrefix } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";
import { eachRecord, listRecords, setWhileReleaseExists } from "./with_release.ts";

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
  return await setWhileReleaseExists(
    store,
    releaseId,
    deltas.map((delta) => [sparkleDeltaKey(releaseId, delta.index), delta]),
  );
}

export async function listSparkleDeltasByRelease(
  store: Store,
  releaseId: number,
): Promise<SparkleDelta[]> {
  return await listRecords(store, sparkleDeltasPrefix(releaseId));
}

/** Every delta of every release (the storage sweep keeps those whose release exists). */
export function listAllSparkleDeltas(store: Store): AsyncGenerator<SparkleDelta> {
  return eachRecord(store, sparkleDeltasPrefix());
}
