/**
 * A release upload through the publishing API: the same streamed path as the
 * admin form's upload (admin/routes/upload.tsx), through the receiver every
 * upload shares (src/storage/upload.ts) and the one rule of a release from an
 * upload (src/publishing/release_upload.ts): the multipart body is read by
 * src/http/multipart.ts, the file part streams straight into the artifact
 * store (constant memory, same limit, same 507), the record is committed
 * last, and on any refusal the stored file is removed again. Here: every part
 * must be a known field, and a rollout field needs the `release_state`
 * permission.
 */
import { ApiError, uploadFailureReason } from "../../http/errors.ts";
import type { MultipartPart } from "../../http/multipart.ts";
import {
  type ArtifactStore,
  type ReceivedFile,
  receiveUpload,
  type RecordedUpload,
  recordUpload,
} from "../../storage/mod.ts";
import { ValidationError } from "../../kv/errors.ts";
import type { ServiceDeps } from "../../http/app_env.ts";
import {
  MAX_FIELD_BYTES,
  releaseFromUpload,
  ROLLOUT_FIELDS,
  UPLOAD_FIELDS,
  type UploadField,
  type UploadFieldValues,
} from "../release_upload.ts";

/** What `receive` needs besides the parts. */
interface ReceiveOptions {
  artifacts: ArtifactStore;
  maxBytes: number;
  /** Whether the token may start a rollout (`release_state`); else a rollout field is a 403. */
  mayStartRollout: boolean;
}

/** Reads every part: the file into the store, the text fields into the result (shared receiver). */
async function receive(
  parts: AsyncIterable<MultipartPart>,
  { artifacts, maxBytes, mayStartRollout }: ReceiveOptions,
): Promise<{ values: UploadFieldValues; file: ReceivedFile | null }> {
  const values: UploadFieldValues = {};
  const file = await receiveUpload(parts, {
    artifacts,
    maxBytes,
    onPart: async (part) => {
      if (part.name === "file") throw new ValidationError("file", "send one file part only");
      if (!(UPLOAD_FIELDS as readonly string[]).includes(part.name)) {
        throw new ValidationError(
          part.name,
          `unknown field ${JSON.stringify(part.name.slice(0, 64))}; the fields are file, ` +
            UPLOAD_FIELDS.join(", "),
        );
      }
      const value = await part.text(MAX_FIELD_BYTES);
      if (
        !mayStartRollout && (ROLLOUT_FIELDS as readonly string[]).includes(part.name) &&
        value.trim() !== ""
      ) {
        throw new ApiError(
          403,
          `this publish token lacks the permission release_state, which ${part.name} ` +
            "(a staged rollout) needs; nothing was stored",
        );
      }
      values[part.name as UploadField] = value;
    },
  });
  return { values, file };
}

/**
 * Receives and records one upload through `deps.store` (the request's): the release, and its
 * rollout's outcome when one was asked for. Failures are counted in the upload metrics and
 * rethrown.
 */
export async function uploadRelease(
  deps: ServiceDeps,
  { projectId, parts, mayStartRollout }: {
    projectId: number;
    parts: AsyncIterable<MultipartPart>;
    mayStartRollout: boolean;
  },
): Promise<RecordedUpload> {
  try {
    const received = await receive(parts, {
      artifacts: deps.artifacts,
      maxBytes: deps.config.maxUploadBytes,
      mayStartRollout,
    });
    const uploaded = await recordUpload(deps.store, deps.artifacts, {
      file: received.file,
      build: () => releaseFromUpload(projectId, received),
      onKvError: () => deps.metrics.recordKvError("admin"),
    });
    deps.metrics.recordUpload(uploaded.release.size_bytes);
    return uploaded;
  } catch (error) {
    deps.metrics.recordUploadFailure(uploadFailureReason(error));
    throw error;
  }
}
