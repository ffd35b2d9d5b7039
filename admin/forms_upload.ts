/** The release upload form's text fields (the file part streams to the artifact store). */

/** The text fields of the upload form, read from the multipart body by name. */
export const UPLOAD_TEXT_FIELDS = [
  "version",
  "build",
  "release_notes",
  // Optional checkboxes (docs/publishing.md "Drafts and a chosen latest"); absent: as before.
  "draft",
  "not_latest",
  // Optional updater signatures (docs/feeds.md); absent: none.
  "tauri_signature",
  "sparkle_signature",
] as const;

/** The upload form as entered: shown again with an error. */
export type UploadValues = Record<typeof UPLOAD_TEXT_FIELDS[number], string>;

/** The fields of a release that its edit form changes (the upload's text fields). */
export type ReleaseEditValues = Pick<UploadValues, "version" | "build" | "release_notes">;

/**
 * The form's fields as the upload rule (src/publishing/release_upload.ts)
 * reads them: a checkbox is on when sent with any value but "", as HTML
 * sends a checked box.
 */
export function checkedAsFlags(values: UploadValues): UploadValues {
  const flag = (value: string) => value === "" ? "" : "on";
  return { ...values, draft: flag(values.draft), not_latest: flag(values.not_latest) };
}

export const EMPTY_UPLOAD_FORM: UploadValues = {
  version: "",
  build: "",
  release_notes: "",
  draft: "",
  not_latest: "",
  tauri_signature: "",
  sparkle_signature: "",
};
