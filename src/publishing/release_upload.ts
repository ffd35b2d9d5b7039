/**
 * The rule of a release from an upload, one for every surface that takes
 * uploads (the admin forms, the publishing API): which text fields there are,
 * how large they and the body may be, and how the fields and the received file
 * become the release (and the staged rollout) that src/storage/upload.ts
 * records. What it refuses it throws as the errors the HTTP surfaces map
 * (src/http/errors.ts); each surface reads its own fields from the body.
 */
import {
  EmptyUploadError,
  type ReceivedFile,
  UploadMismatchError,
  type UploadRecord,
} from "../storage/mod.ts";
import { ValidationError } from "../kv/errors.ts";
import { validateReleaseFields } from "../releases/releases.ts";
import { parsePercentage, parseSchedule, parseTesterTag } from "../releases/rollouts.ts";
import { requireMediaType } from "../projects/validate.ts";
import { sparkleSignature, tauriSignature } from "../feeds/signatures.ts";

/**
 * The upload fields of a staged rollout (docs/rollouts.md), optional: the percentage, a
 * schedule, a tester tag.
 */
export const ROLLOUT_FIELDS = [
  "rollout_percentage",
  "rollout_schedule",
  "rollout_tester_tag",
] as const;

/** The text fields of an upload (docs/publishing.md "Upload a release"); the file is `file`. */
export const UPLOAD_FIELDS = [
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
export type UploadField = typeof UPLOAD_FIELDS[number];
/** The text fields an upload sent; an absent one is as if sent empty. */
export type UploadFieldValues = Partial<Record<UploadField, string>>;

/** Largest text field of an upload. */
export const MAX_FIELD_BYTES = 512 * 1024;
/** Room for the text fields next to the file when judging Content-Length. */
const FIELDS_ALLOWANCE_BYTES = 1024 * 1024;

const SHA256_PATTERN = /^[0-9a-fA-F]{64}$/;
/** A declared size: a whole number of bytes, without sign or leading zeros. */
const SIZE_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

/**
 * Whether a body that declares `contentLength` is larger than any upload of
 * at most `maxUploadBytes` can be: refused before a byte is stored.
 */
export function declaresTooMuch(
  contentLength: string | undefined,
  maxUploadBytes: number,
): boolean {
  return Number(contentLength ?? NaN) > maxUploadBytes + FIELDS_ALLOWANCE_BYTES;
}

/** A yes/no field: true, 1, on (a checked box), yes, or false, 0, off, no (or empty, or absent). */
export function flag(name: string, raw: string | undefined): boolean {
  const value = (raw ?? "").trim().toLowerCase();
  if (["true", "1", "on", "yes"].includes(value)) return true;
  if (["", "false", "0", "off", "no"].includes(value)) return false;
  throw new ValidationError(name, `${name} must be true or false`);
}

/**
 * The release (and its rollout, when asked for) of project `projectId` from
 * an upload's fields and stored file: checks the fields, the sender's SHA-256
 * and size against the stored file's, and the media type, which the
 * `content_type` field names, else the file part.
 */
export function releaseFromUpload(
  projectId: number,
  { values, file }: { values: UploadFieldValues; file: ReceivedFile | null },
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
    throw new UploadMismatchError(
      `size mismatch: you sent size_bytes ${declaredSize}, the service received ` +
        `${file.stored.size_bytes} bytes; nothing was stored`,
    );
  }
  if (expected && expected.toLowerCase() !== file.stored.checksum_sha256) {
    throw new UploadMismatchError(
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
  const namedType = values.content_type?.trim() ? values.content_type : undefined;
  return {
    release: {
      project_id: projectId,
      ...fields,
      filename: values.filename?.trim() ? values.filename : (file.filename ?? ""),
      content_type: namedType === undefined
        ? requireMediaType("file", file.contentType)
        : requireMediaType("content_type", namedType),
      ...file.stored,
      ...signatures,
      draft,
      make_latest: !notLatest,
    },
    // Started over the current latest once the release is recorded (src/storage/upload.ts).
    rollout,
  };
}
