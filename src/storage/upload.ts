/**
 * The one upload receiver behind every way a release arrives: the admin forms
 * (admin/routes/upload.tsx), the publishing API (src/publishing/api/upload.ts)
 * and `publishRelease` (publish.ts). Receiving streams the file part into the
 * artifact store and hands every other part to the caller; recording commits
 * the release the caller builds from the received file (and starts the staged
 * rollout it asks for), removes the file again on any refusal or failure
 * before the commit, and settles it either way.
 */
import { createBlockMap } from "../artifact_records/block_maps.ts";
import { ConflictError, ValidationError } from "../kv/errors.ts";
import { createRelease, createStagedRelease, type ReleaseInput } from "../releases/releases.ts";
import { type RolloutInput, startRollout } from "../releases/rollouts.ts";
import type { Release, Rollout } from "../releases/types.ts";
import {
  type ArtifactStore,
  EmptyUploadError,
  type StoredArtifact,
  type UploadPart,
} from "./types.ts";
import { checkBlockMap, MAX_BLOCK_MAP_BYTES, readSmallPart } from "./block_map_part.ts";
import { type ReceivedDeltas, receivedDeltas, recordDeltas } from "./sparkle_delta_parts.ts";
import type { Store } from "../kv/store.ts";

/** The stored file of an upload, and how its part named it. */
export interface ReceivedFile {
  stored: StoredArtifact;
  filename: string | undefined;
  contentType: string | undefined;
  /** The vendor's block map (the part `blockmap`), kept instead of one the service builds. */
  blockMap?: Uint8Array;
  /** Sparkle and Squirrel.Windows deltas uploaded with the file (sparkle_delta_parts.ts). */
  sparkleDeltas?: ReceivedDeltas;
}

export interface ReceiveOptions<P extends UploadPart> {
  artifacts: ArtifactStore;
  maxBytes: number;
  /** Every part but the file: the caller reads, skips or refuses it (by throwing). */
  onPart: (part: P) => Promise<void>;
}

/**
 * Reads every part, streaming the first non-empty `file` part into the store
 * (an empty one counts as none, so the caller reports it after its other
 * checks); null when no file arrived. If reading fails after the file was
 * stored, the file is removed again.
 */
export async function receiveUpload<P extends UploadPart>(
  parts: AsyncIterable<P>,
  { artifacts, maxBytes, onPart }: ReceiveOptions<P>,
): Promise<ReceivedFile | null> {
  let file: ReceivedFile | null = null;
  let blockMap: Uint8Array | undefined;
  const deltas = receivedDeltas(artifacts, maxBytes);
  try {
    for await (const part of parts) {
      if (part.name === BLOCK_MAP_PART && part.filename !== undefined && blockMap === undefined) {
        blockMap = await readSmallPart(part.body, { field: "blockmap", max: MAX_BLOCK_MAP_BYTES });
      } else if (await deltas.take(part)) {
        continue;
      } else if (part.name === "file" && file === null) {
        const stored = await artifacts.save(part.body, maxBytes).catch((error) => {
          if (error instanceof EmptyUploadError) return null;
          throw error;
        });
        if (stored !== null) {
          file = { stored, filename: part.filename, contentType: part.contentType };
        }
      } else {
        await onPart(part);
      }
    }
  } catch (error) {
    if (file !== null) await artifacts.remove(file.stored.storage_key);
    await deltas.received.remove();
    throw error;
  }
  if (file !== null && blockMap !== undefined && blockMap.byteLength > 0) file.blockMap = blockMap;
  if (file !== null) file.sparkleDeltas = deltas.received;
  else await deltas.received.remove();
  return file;
}

/** The multipart part (a file) holding the vendor's block map of the upload's file. */
const BLOCK_MAP_PART = "blockmap";

/** What an upload records: the release, and the staged rollout to start over the latest, if any. */
export interface UploadRecord {
  release: ReleaseInput;
  rollout?: RolloutInput | null;
}

export interface RecordOptions {
  file: ReceivedFile | null;
  /** Checks the upload and builds its record; throws what refuses it (EmptyUploadError without a file). */
  build: (file: ReceivedFile | null) => UploadRecord | Promise<UploadRecord>;
  /** A commit that failed on our side (not a refusal of the release): for the KV error count. */
  onKvError?: (error: unknown) => void;
}

/**
 * The rollout an upload asked for: started, or why it did not start after the
 * release was recorded (the release stays, active and not the latest).
 */
export type UploadRollout = { started: Rollout } | { failed: string };

export interface RecordedUpload {
  release: Release;
  /** Null when no rollout was asked for, or none applies (a draft, no latest to roll out from). */
  rollout: UploadRollout | null;
}

/**
 * Commits the release of a received file; on any refusal or failure before
 * the commit removes the file. A rollout that cannot start afterwards (a
 * concurrent change of the latest, a KV error) never removes the stored
 * release or its file: it is answered in `rollout.failed`.
 */
export async function recordUpload(
  store: Store,
  artifacts: ArtifactStore,
  { file, build, onKvError }: RecordOptions,
): Promise<RecordedUpload> {
  try {
    const { release: input, rollout = null } = await build(file);
    if (file?.blockMap !== undefined) await checkBlockMap(file.blockMap, file.stored.size_bytes);
    await file?.sparkleDeltas?.check(store, input);
    // A rollout starts from the current latest; a project without one simply gets the release.
    // Whether there is one is decided in the release's own commit, not by a read before it.
    const { release, staged } = await (rollout === null
      ? createRelease(store, input).then((release) => ({ release, staged: false }))
      : createStagedRelease(store, input))
      .catch((error) => {
        if (!(error instanceof ValidationError || error instanceof ConflictError)) {
          onKvError?.(error);
        }
        throw error;
      });
    if (file?.blockMap !== undefined) {
      await keepVendorBlockMap(store, release, file.blockMap);
    }
    if (file?.sparkleDeltas !== undefined) {
      await recordDeltas(store, release, file.sparkleDeltas);
    }
    return {
      release,
      rollout: staged && rollout !== null
        ? await startUploadRollout(store, release, rollout)
        : null,
    };
  } catch (error) {
    if (file !== null) await artifacts.remove(file.stored.storage_key);
    await file?.sparkleDeltas?.remove();
    throw error;
  } finally {
    // Committed or removed: the storage sweep may judge the file from now on.
    if (file !== null) artifacts.settle?.(file.stored.storage_key);
    file?.sparkleDeltas?.settle();
  }
}

/** Records the vendor's block map; a failure leaves it to the background build (logged). */
async function keepVendorBlockMap(store: Store, release: Release, bytes: Uint8Array) {
  try {
    await createBlockMap(store, { releaseId: release.id, madeBy: "vendor", bytes });
  } catch (error) {
    console.error("keeping the uploaded block map failed:", error);
  }
}

async function startUploadRollout(
  store: Store,
  release: Release,
  rollout: RolloutInput,
): Promise<UploadRollout> {
  try {
    return { started: await startRollout(store, release.id, rollout) };
  } catch (error) {
    console.error("rollout start after upload failed:", error);
    const reason = error instanceof ValidationError || error instanceof ConflictError
      ? error.message
      : "the store did not answer";
    return { failed: reason };
  }
}
