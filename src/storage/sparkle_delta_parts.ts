/**
 * Deltas uploaded with a release. Sparkle's (docs/feeds.md "Sparkle deltas"):
 * the file parts `sparkle_delta` (the `.delta` files Sparkle's `BinaryDelta`
 * made), each paired in order with a text part `sparkle_delta_from` (the
 * bundle version it applies to) and `sparkle_delta_signature` (its
 * `sparkle:edSignature`). Squirrel.Windows' (docs/feeds.md "Squirrel.Windows
 * deltas"): at most one file part `squirrel_delta` (the
 * `{App}-{version}-delta.nupkg` releasify made) and an optional text part
 * `squirrel_delta_from` (the version it applies to; else the project's
 * release uploaded before this one). Each file is stored like the release's
 * own file; all of them are removed again when the upload is refused, and
 * recorded with the release once it is committed.
 */
import { ValidationError } from "../kv/errors.ts";
import { createSparkleDeltas } from "../artifact_records/sparkle_deltas.ts";
import { createSquirrelDelta } from "../artifact_records/squirrel_deltas.ts";
import { releasesByProjectPrefix } from "../kv/keys.ts";
import { findInReleaseIndex } from "../releases/releases.ts";
import type { Release } from "../releases/types.ts";
import { readSmallPart } from "./block_map_part.ts";
import {
  type ArtifactStore,
  EmptyUploadError,
  type StoredArtifact,
  type UploadPart,
} from "./types.ts";
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
const SQUIRREL_PART = "squirrel_delta";
const SQUIRREL_FROM_PART = "squirrel_delta_from";
/** A Squirrel.Windows delta package's name: `{App}-{version}-delta.nupkg`. */
const SQUIRREL_DELTA_NAME = /^[^\s/\\]+-([^\s/\\-]+)-delta\.nupkg$/i;

/** What one upload brought: the stored files and the text parts, in the order they came. */
export interface ReceivedDeltas {
  files: Array<{ stored: StoredArtifact; filename: string }>;
  from: string[];
  signatures: string[];
  /** The Squirrel.Windows delta package, if one came. */
  squirrel: { stored: StoredArtifact; filename: string } | null;
  /** The version the Squirrel.Windows delta applies to, as sent ("" when not). */
  squirrelFrom: string;
  /**
   * Throws a ValidationError unless files, versions and signatures pair up and are
   * well-formed, and the Squirrel.Windows delta is named for the release's version; then
   * settles which version that delta applies to (the field, else the project's release
   * uploaded before this one).
   */
  check(store: Store, release: Pick<Release, "project_id" | "version">): Promise<void>;
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
    squirrel: null,
    squirrelFrom: "",
    async check(store, release) {
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
      await checkSquirrel(store, release);
    },
    async remove() {
      const stored = [...received.files.map((file) => file.stored)];
      if (received.squirrel !== null) stored.push(received.squirrel.stored);
      for (const { storage_key } of stored) {
        await artifacts.remove(storage_key);
        artifacts.settle?.(storage_key);
      }
      received.files = [];
      received.squirrel = null;
    },
    settle() {
      for (const { stored } of received.files) artifacts.settle?.(stored.storage_key);
      if (received.squirrel !== null) artifacts.settle?.(received.squirrel.stored.storage_key);
    },
  };
  const checkSquirrel = async (
    store: Store,
    release: Pick<Release, "project_id" | "version">,
  ) => {
    const delta = received.squirrel;
    if (delta === null) {
      if (received.squirrelFrom !== "") {
        throw new ValidationError(
          SQUIRREL_FROM_PART,
          `${SQUIRREL_FROM_PART} needs a ${SQUIRREL_PART} file`,
        );
      }
      return;
    }
    const named = SQUIRREL_DELTA_NAME.exec(delta.filename)?.[1];
    if (named === undefined || named.toLowerCase() !== release.version.toLowerCase()) {
      throw new ValidationError(
        SQUIRREL_PART,
        `${SQUIRREL_PART} must be the delta package releasify made for this version, named ` +
          `{App}-${release.version}-delta.nupkg`,
      );
    }
    if (received.squirrelFrom !== "") {
      if (
        !BUNDLE_VERSION.test(received.squirrelFrom) ||
        received.squirrelFrom === release.version
      ) {
        throw new ValidationError(
          SQUIRREL_FROM_PART,
          `${SQUIRREL_FROM_PART} must be the older version the delta package applies to`,
        );
      }
      return;
    }
    const previous = await findInReleaseIndex(store, {
      prefix: releasesByProjectPrefix(release.project_id),
      batch: 16,
      pick: (older) => older.state === "active" && older.version !== release.version ? older : null,
    });
    if (previous === null) {
      throw new ValidationError(
        SQUIRREL_FROM_PART,
        `${SQUIRREL_FROM_PART} is needed: the project has no earlier release the delta ` +
          "package can apply to",
      );
    }
    received.squirrelFrom = previous.version;
  };
  const text = async (part: UploadPart) =>
    new TextDecoder().decode(await readSmallPart(part.body, { field: part.name, max: 1024 }))
      .trim();
  return {
    received,
    /** Takes `part` when it is one of the delta parts; false for any other part. */
    async take(part: UploadPart): Promise<boolean> {
      if (part.name === SQUIRREL_PART && part.filename !== undefined) {
        if (received.squirrel !== null) {
          throw new ValidationError(SQUIRREL_PART, `${SQUIRREL_PART}: at most one delta package`);
        }
        // An empty file input of the admin form sends an empty part: as if none.
        const stored = await artifacts.save(part.body, maxBytes).catch((error) => {
          if (error instanceof EmptyUploadError) return null;
          throw error;
        });
        if (stored !== null) {
          received.squirrel = { stored, filename: part.filename.split(/[\\/]/).at(-1)! };
        }
        return true;
      }
      if (part.name === SQUIRREL_FROM_PART) {
        received.squirrelFrom = await text(part);
        return true;
      }
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
export async function recordDeltas(
  store: Store,
  release: Release,
  received: ReceivedDeltas,
): Promise<void> {
  await recordSparkleDeltas(store, release, received);
  const squirrel = received.squirrel;
  if (squirrel === null) return;
  try {
    await createSquirrelDelta(store, {
      release_id: release.id,
      from: received.squirrelFrom,
      filename: squirrel.filename,
      storage_key: squirrel.stored.storage_key,
      checksum_sha256: squirrel.stored.checksum_sha256,
      size_bytes: squirrel.stored.size_bytes,
    });
  } catch (error) {
    console.error("recording the uploaded squirrel delta failed:", error);
  }
}

async function recordSparkleDeltas(
  store: Store,
  release: Release,
  received: ReceivedDeltas,
): Promise<void> {
  if (received.files.length === 0) return;
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
