/** The release upload form: on a project's page, and on the upload page with a project field. */
import type { Child } from "hono/jsx";
import { humanBytes } from "../format.ts";
import type { UploadValues } from "../forms_upload.ts";
import type { FormError } from "../types.ts";
import { FormErrorSummary, InputField, TextAreaField } from "./components.tsx";
import { CsrfInput, type PageContext } from "./layout.tsx";
import { TEXT_FIELDS } from "./text_fields.ts";

export interface UploadFormProps {
  ctx: PageContext;
  action: string;
  maxUploadBytes: number;
  upload: UploadValues;
  uploadError?: FormError | null;
  /** Fields before the release's own (the upload page's project). */
  children?: Child;
}

export function UploadFormBody(
  { ctx, action, maxUploadBytes, upload, uploadError, children }: UploadFormProps,
) {
  return (
    <>
      <FormErrorSummary error={uploadError} />
      <form
        method="post"
        action={action}
        enctype="multipart/form-data"
        class="stack"
        data-upload
        data-max-bytes={String(maxUploadBytes)}
      >
        {/* First in the form, so the token arrives before the file bytes. */}
        <CsrfInput token={ctx.csrfToken} />
        {children}
        <div class="field-row">
          <InputField
            id="release-version"
            {...TEXT_FIELDS.version}
            value={upload.version}
            error={uploadError}
          />
          <InputField
            id="release-build"
            {...TEXT_FIELDS.build}
            value={upload.build}
            error={uploadError}
          />
        </div>
        <TextAreaField
          id="release-notes"
          {...TEXT_FIELDS.releaseNotes}
          value={upload.release_notes}
          error={uploadError}
        />
        <InputField
          id="release-file"
          name="file"
          label="File"
          type="file"
          error={uploadError}
          required
          hint={
            <>Up to {humanBytes(maxUploadBytes)}. Size and SHA-256 are computed by the service.</>
          }
        />
        <div class="field">
          <label>
            <input type="checkbox" name="draft" checked={upload.draft !== ""} /> Upload as a{" "}
            draft: stored and listed here, invisible to clients until you publish it
          </label>
          <label>
            <input type="checkbox" name="not_latest" checked={upload.not_latest !== ""} />{" "}
            Do not make this the latest release (the current latest stays, as the chosen one)
          </label>
        </div>
        <details
          class="fold"
          data-signature-fields
          open={upload.tauri_signature !== "" || upload.sparkle_signature !== "" ||
              ["tauri_signature", "sparkle_signature"].includes(uploadError?.field ?? "")
            ? true
            : undefined}
        >
          <summary>Updater signatures (Tauri, Sparkle), if your feeds need them</summary>
          <TextAreaField
            id="release-tauri-signature"
            name="tauri_signature"
            label="Tauri signature"
            optional="optional"
            rows={3}
            maxlength={4096}
            hint={<>The .sig file your Tauri build wrote for this file (see docs/feeds.md).</>}
            value={upload.tauri_signature}
            error={uploadError}
          />
          <TextAreaField
            id="release-sparkle-signature"
            name="sparkle_signature"
            label="Sparkle EdDSA signature"
            optional="optional"
            rows={2}
            maxlength={4096}
            hint={<>What Sparkle's sign_update printed for this file.</>}
            value={upload.sparkle_signature}
            error={uploadError}
          />
        </details>
        <details
          class="fold"
          data-squirrel-delta-fields
          open={["squirrel_delta", "squirrel_delta_from"].includes(uploadError?.field ?? "")
            ? true
            : undefined}
        >
          <summary>Squirrel.Windows delta package, if releasify made one</summary>
          <div class="field-row">
            <InputField
              id="release-squirrel-delta"
              name="squirrel_delta"
              label="Squirrel.Windows delta package"
              type="file"
              optional="optional"
              accept=".nupkg"
              hint={<>The -delta.nupkg releasify made for this version (see docs/feeds.md).</>}
              error={uploadError}
            />
            <InputField
              id="release-squirrel-delta-from"
              name="squirrel_delta_from"
              label="Delta applies to version"
              optional="optional"
              maxlength={128}
              hint={<>Empty: the release uploaded before this one.</>}
              error={uploadError}
            />
          </div>
        </details>
        <div class="upload-progress" data-upload-progress hidden>
          <progress max={100} value={0} aria-labelledby="upload-status"></progress>
          <output id="upload-status" data-upload-status aria-live="polite"></output>
        </div>
        <div class="actions">
          <button type="submit" class="button button-primary" data-upload-submit>
            Upload release
          </button>
          <button type="button" class="button" data-upload-cancel hidden>Cancel upload</button>
        </div>
      </form>
    </>
  );
}
