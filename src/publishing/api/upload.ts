/**
 * A release upload through the publishing API: the same streamed path as the
 * admin form's upload (admin/routes/upload.tsx), through the receiver every
 * upload shares (src/storage/upload.ts): the multipart body is read
 * by src/http/multipart.ts, the file part streams straight into the artifact
 * store (constant memory, same limit, same 507), the record is committed
 * last, and on any refusal the stored file is removed again. On top of the
 * form: the SHA-256 and size the pipeline computed (`sha256`, `size_bytes`) are
 * compared with the ones the store computed, and `filename` / `content_type` fields may name the
 * file instead of the part's headers.
 */
import type { UploadFailureReason } from "../../lib/metrics.ts";
import { ApiError } from "../../http/errors.ts";
import { MultipartError, type MultipartPart } from "../../http/multipart.ts";
import {
  type ArtifactStore,
  EmptyUploadError,
  type ReceivedFile,
  receiveUpload,
  type RecordedUpload,
  recordUpload,
  StorageFullError,
  StorageUnavailableError,
  type UploadRecord,
  UploadTooLargeError,
} from "../../storage/mod.ts";
import {
  parsePercentage,
  parseSchedule,
  parseTesterTag,
  requireMediaType,
  validateReleaseFields,
  ValidationError,
} from "../../store/mod.ts";
import type { ServiceDeps } from "../../http/app_env.ts";
import { sparkleSignature, tauriSignature } from "../../feeds/signatures.ts";

/**
 * The upload fields of a staged rollout (docs/rollouts.md), optional: the percentage, a
 * schedule, a tester tag. Starting a rollout needs the `release_state` permission.
 */
const ROLLOUT_FIELDS = ["rollout_percentage", "rollout_schedule", "rollout_tester_tag"] as const;

/** The text fields of an API upload (docs/publishing.md "Upload a release"). */
export const API_UPLOAD_FIELDS = [
  "version",
  "build",
  "release_notes",
  "sha256",
  "size_bytes",
  "filename",
  "content_type",
  "draft",
  "not_latest",
  ...ROLLOUT_FIELDS,
  // Updater signatures (docs/feeds.md), optional.
  "tauri_signature",
  "sparkle_signature",
] as const;
type UploadField = typeof API_UPLOAD_FIELDS[number];
export type ApiUploadValues = Partial<Record<UploadField, string>>;

const MAX_FIELD_BYTES = 512 * 1024;
/** Room for the text fields next to the file when judging Content-Length. */
export const FIELDS_ALLOWANCE_BYTES = 1024 * 1024;
const SHA256_PATTERN = /^[0-9a-fA-F]{64}$/;
/** A declared size: a whole number of bytes, without sign or leading zeros. */
const SIZE_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

/** A release upload's outcome: the release, and its rollout's when one was asked for. */
export type UploadedRelease = RecordedUpload;

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
): Promise<{ values: ApiUploadValues; file: ReceivedFile | null }> {
  const values: ApiUploadValues = {};
  const file = await receiveUpload(parts, {
    artifacts,
    maxBytes,
    onPart: async (part) => {
      if (part.name === "file") throw new ValidationError("file", "send one file part only");
      if (!(API_UPLOAD_FIELDS as readonly string[]).includes(part.name)) {
        throw new ValidationError(
          part.name,
          `unknown field ${JSON.stringify(part.name.slice(0, 64))}; the fields are file, ` +
            API_UPLOAD_FIELDS.join(", "),
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

/** Checks the fields (and the pipeline's SHA-256) and builds the release and its rollout. */
function uploadRecord(
  projectId: number,
  { values, file }: { values: ApiUploadValues; file: ReceivedFile | null },
): UploadRecord {
  const fields = validateReleaseFields(values);
  const signatures = {
    tauri_signature: tauriSignature(values.tauri_signature),
    sparkle_signature: sparkleSignature(values.sparkle_signature),
  };
  const expected = values.sha256?.trim();
  if (expected !== undefined && expected !== "" && !SHA256_PATTERN.test(expected)) {
    throw new ValidationError("sha256", "sha256 must be 64 hexadecimal digits");
  }
  const declaredSize = values.size_bytes?.trim();
  if (declaredSize && !SIZE_PATTERN.test(declaredSize)) {
    throw new ValidationError("size_bytes", "size_bytes must be a whole number of bytes");
  }
  if (file === null) throw new EmptyUploadError();
  if (declaredSize && Number(declaredSize) !== file.stored.size_bytes) {
    throw new ApiError(
      422,
      `size mismatch: you sent size_bytes ${declaredSize}, the service received ` +
        `${file.stored.size_bytes} bytes; nothing was stored`,
    );
  }
  if (expected && expected.toLowerCase() !== file.stored.checksum_sha256) {
    throw new ApiError(
      422,
      `sha256 mismatch: you sent ${expected.toLowerCase()}, the service received ` +
        `${file.stored.size_bytes} bytes with SHA-256 ${file.stored.checksum_sha256}; ` +
        "nothing was stored",
    );
  }
  const draft = flag("draft", values.draft);
  const notLatest = flag("not_latest", values.not_latest);
  const rollout = values.rollout_percentage?.trim()
    ? {
      percentage: parsePercentage("rollout_percentage", values.rollout_percentage),
      schedule: parseSchedule(values.rollout_schedule ?? ""),
      // Checked before anything is recorded, as the percentage and schedule are.
      tester_tag: parseTesterTag(values.rollout_tester_tag),
    }
    : null;
  const contentType = values.content_type?.trim() ? values.content_type : file.contentType;
  return {
    release: {
      project_id: projectId,
      ...fields,
      filename: values.filename?.trim() ? values.filename : (file.filename ?? ""),
      content_type: requireMediaType("content_type", contentType),
      ...file.stored,
      ...signatures,
      draft,
      make_latest: !notLatest,
    },
    // Started over the current latest once the release is recorded (src/storage/upload.ts).
    rollout,
  };
}

/** Receives and records one upload; failures are counted in the upload metrics and rethrown. */
export async function uploadRelease(
  deps: ServiceDeps,
  { projectId, parts, mayStartRollout }: {
    projectId: number;
    parts: AsyncIterable<MultipartPart>;
    mayStartRollout: boolean;
  },
): Promise<UploadedRelease> {
  try {
    const received = await receive(parts, {
      artifacts: deps.artifacts,
      maxBytes: deps.config.maxUploadBytes,
      mayStartRollout,
    });
    const uploaded = await recordUpload(deps.kv, deps.artifacts, {
      file: received.file,
      build: () => uploadRecord(projectId, received),
      onKvError: () => deps.metrics.recordKvError("admin"),
    });
    deps.metrics.recordUpload(uploaded.release.size_bytes);
    return uploaded;
  } catch (error) {
    deps.metrics.recordUploadFailure(failureReason(error));
    throw error;
  }
}

/** A yes/no field: true, 1, on, yes, or false, 0, off, no (or empty, or absent). */
export function flag(name: string, raw: string | undefined): boolean {
  const value = (raw ?? "").trim().toLowerCase();
  if (["true", "1", "on", "yes"].includes(value)) return true;
  if (["", "false", "0", "off", "no"].includes(value)) return false;
  throw new ValidationError(name, `${name} must be true or false`);
}

function failureReason(error: unknown): UploadFailureReason {
  if (error instanceof UploadTooLargeError) return "too_large";
  if (error instanceof EmptyUploadError) return "empty";
  if (error instanceof StorageFullError) return "storage_full";
  if (error instanceof StorageUnavailableError) return "storage_unavailable";
  if (
    error instanceof ValidationError || error instanceof MultipartError ||
    error instanceof ApiError
  ) {
    return "invalid";
  }
  return "error";
}
