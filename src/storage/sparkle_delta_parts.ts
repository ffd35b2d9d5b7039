/**
 * Sparkle deltas uploaded with a release (docs/feeds.md "Sparkle deltas"):
 * the file parts `sparkle_delta` (the `.delta` files Sparkle's `BinaryDelta`
 * made), each paired in order with a text part `sparkle_delta_from` (the
 * bundle version it applies to) and `sparkle_delta_signature` (its
 * `sparkle:edSignature`). Each file is stored like the release's own file;
 * all of them are removed again when the upload is refused, and recorded with
 * the release once it is committed.
 */
import { ValidationError } from "../kv/errors.ts";
import { createSparkleDeltas } from "../store/sparkle_deltas.ts";
import type { Release } from "../store/types.ts";
import { readSmallPart } from "./block_map_part.ts";
import type { ArtifactStore, StoredArtifact, UploadPart } from "./types.ts";
import type { Store } from "../kv/store.ts";

const FILE_PART = "sparkle_delta";
const FROM_PART = "sparkle_delta_from";
const SIGNATURE_PART = "sparkle_delta_signature";
/** The most deltas one release carries. */
const MAX_SPARKLE_DELTAS = 32;
/** An EdDSA signature in base64: 64 bytes. */
const SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;
/** A bundle version as Sparkle compares it. */
const BUNDLE_VERSION = /^[\x21-\x7e]{1,128}$/;

/** What one upload brought: the stored files and the text parts, in the order they came. */
export interface ReceivedDeltas {
  files: Array<{ stored: StoredArtifact; filename: string }>;
  from: string[];
  signatures: string[];
  /** Throws a ValidationError unless files, versions and signatures pair up and are well-formed. */
  check(): void;
  /** Removes the stored files (the upload was refused) and lets them go. */
  remove(): Promise<void>;
  /** The upload is committed or removed: the store may let the sweep judge the files. */
  settle(): void;
}

/** Collects the Sparkle delta parts of one upload as its reader hands them on. */
export function receivedDeltas(artifacts: ArtifactStore, maxBytes: number) {
  const received: ReceivedDeltas = {
    files: [],
    from: [],
    signatures: [],
    check() {
      const { files, from, signatures } = received;
      if (files.length !== from.length || files.length !== signatures.length) {
        throw new ValidationError(
          FILE_PART,
          `each ${FILE_PART} needs a ${FROM_PART} and a ${SIGNATURE_PART}, in the same order`,
        );
      }
      if (from.some((version) => !BUNDLE_VERSION.test(version))) {
        throw new ValidationError(FROM_PART, "must be the bundle version the delta applies to");
      }
      if (signatures.some((signature) => !SIGNATURE.test(signature))) {
        throw new ValidationError(
          SIGNATURE_PART,
          "must be the base64 EdDSA signature sign_update prints (64 bytes)",
        );
      }
    },
    async remove() {
      for (const { stored } of received.files) {
        await artifacts.remove(stored.storage_key);
        artifacts.settle?.(stored.storage_key);
      }
      received.files = [];
    },
    settle() {
      for (const { stored } of received.files) artifacts.settle?.(stored.storage_key);
    },
  };
  const text = async (part: UploadPart) =>
    new TextDecoder().decode(await readSmallPart(part.body, { field: part.name, max: 1024 }))
      .trim();
  return {
    received,
    /** Takes `part` when it is one of the delta parts; false for any other part. */
    async take(part: UploadPart): Promise<boolean> {
      if (part.name === FILE_PART && part.filename !== undefined) {
        if (received.files.length === MAX_SPARKLE_DELTAS) {
          throw new ValidationError(FILE_PART, `at most ${MAX_SPARKLE_DELTAS} deltas`);
        }
        const stored = await artifacts.save(part.body, maxBytes);
        received.files.push({ stored, filename: part.filename.split(/[\\/]/).at(-1)! });
        return true;
      }
      if (part.name === FROM_PART) received.from.push(await text(part));
      else if (part.name === SIGNATURE_PART) received.signatures.push(await text(part));
      else return false;
      return true;
    },
  };
}

/** Records the deltas of the committed `release`; a failure leaves the release without them (logged). */
export async function recordSparkleDeltas(
  store: Store,
  release: Release,
  received: ReceivedDeltas,
): Promise<void> {
  try {
    await createSparkleDeltas(
      store,
      received.files.map(({ stored, filename }, index) => ({
        release_id: release.id,
        index,
        from: received.from[index],
        filename,
        storage_key: stored.storage_key,
        checksum_sha256: stored.checksum_sha256,
        size_bytes: stored.size_bytes,
        sparkle_signature: received.signatures[index],
      })),
    );
  } catch (error) {
    console.error("recording the uploaded sparkle deltas failed:", error);
  }
}
