/** Ties a stored artifact to its release record: the record is written only once the bytes are complete. */
import { createRelease, type Release, type ReleaseInput } from "../store/mod.ts";
import type { ArtifactStore, ByteSource, StoredArtifact } from "./types.ts";

export type PublishInput = Omit<ReleaseInput, keyof StoredArtifact>;

/**
 * Stores the bytes, then commits the release; on any failure removes the
 * artifact again. The store holds the artifact against the sweep until then.
 */
/** What to publish: the release's fields and its bytes, at most `maxBytes` of them. */
export interface PublishOptions {
  release: PublishInput;
  source: ByteSource;
  maxBytes: number;
}

export async function publishRelease(
  kv: Deno.Kv,
  store: ArtifactStore,
  { release, source, maxBytes }: PublishOptions,
): Promise<Release> {
  const artifact = await store.save(source, maxBytes);
  try {
    return await createRelease(kv, { ...release, ...artifact });
  } catch (error) {
    await store.remove(artifact.storage_key);
    throw error;
  } finally {
    store.settle?.(artifact.storage_key);
  }
}
