/** The release upload form's text fields (the file part streams to the artifact store). */

/** The text fields of the upload form, read from the multipart body by name. */
export const UPLOAD_TEXT_FIELDS = ["version", "build", "release_notes"] as const;

/** The upload form as entered: shown again with an error. */
export type UploadValues = Record<typeof UPLOAD_TEXT_FIELDS[number], string>;

export const EMPTY_UPLOAD_FORM: UploadValues = { version: "", build: "", release_notes: "" };
