/** Ties a stored artifact to its release record: the record is written only once the bytes are complete. */
import type { ReleaseInput } from "../releases/releases.ts";
import type { Release } from "../releases/types.ts";
import type { ArtifactStore, ByteSource, StoredArtifact } from "./types.ts";
import { recordUpload } from "./upload.ts";
import type { Store } from "../kv/store.ts";

export type PublishInput = Omit<ReleaseInput, keyof StoredArtifact>;

/** What to publish: the release's fields and its bytes, at most `maxBytes` of them. */
export interface PublishOptions {
  release: PublishInput;
  source: ByteSource;
  maxBytes: number;
}

/**
 * Stores the bytes, then commits the release; on any failure removes the
 * artifact again (`recordUpload` in upload.ts, as every upload surface does).
 * The store holds the artifact against the sweep until then.
 */
export async function publishRelease(
  records: Store,
  store: ArtifactStore,
  { release, source, maxBytes }: PublishOptions,
): Promise<Release> {
  const stored = await store.save(source, maxBytes);
  const recorded = await recordUpload(records, store, {
    file: { stored, filename: undefined, contentType: undefined },
    build: () => ({ release: { ...release, ...stored } }),
  });
  return recorded.release;
}
