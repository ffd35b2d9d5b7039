/**
 * Sparkle's delta updates of a release (docs/feeds.md "Sparkle deltas"): the
 * `.delta` files the vendor's `BinaryDelta` made, each from one older bundle
 * version to this release, uploaded with the release and signed by the
 * vendor; the appcast lists them under `<sparkle:deltas>`. The files live in
 * the artifact store; the storage sweep keeps those of existing releases
 * (`listStorageKeys` in releases.ts).
 */
import { commitWithRetry } from "./atomic.ts";
import { releaseKey } from "./keys.ts";
import type { Release } from "./types.ts";

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

/** `["sparkle_deltas", releaseId, index]`: SparkleDelta. */
export function sparkleDeltaKey(releaseId: number, index: number): Deno.KvKey {
  return ["sparkle_deltas", releaseId, index];
}

export function sparkleDeltasPrefix(releaseId?: number): Deno.KvKey {
  return releaseId === undefined ? ["sparkle_deltas"] : ["sparkle_deltas", releaseId];
}

/** Records a release's deltas in one checked commit, while the release exists; false if gone. */
export async function createSparkleDeltas(kv: Deno.Kv, deltas: SparkleDelta[]): Promise<boolean> {
  if (deltas.length === 0) return true;
  const releaseId = deltas[0].release_id;
  return await commitWithRetry(async () => {
    const release = await kv.get<Release>(releaseKey(releaseId));
    if (release.value === null) return { commit: { ok: true, versionstamp: "" }, value: false };
    const op = kv.atomic().check(release);
    for (const delta of deltas) op.set(sparkleDeltaKey(releaseId, delta.index), delta);
    return { commit: await op.commit(), value: true };
  });
}

export async function listSparkleDeltasByRelease(
  kv: Deno.Kv,
  releaseId: number,
): Promise<SparkleDelta[]> {
  const deltas: SparkleDelta[] = [];
  for await (const entry of kv.list<SparkleDelta>({ prefix: sparkleDeltasPrefix(releaseId) })) {
    deltas.push(entry.value);
  }
  return deltas;
}

/** Every delta of every release (the storage sweep keeps those whose release exists). */
export async function* listAllSparkleDeltas(kv: Deno.Kv): AsyncGenerator<SparkleDelta> {
  for await (const entry of kv.list<SparkleDelta>({ prefix: sparkleDeltasPrefix() })) {
    yield entry.value;
  }
}
