/**
 * Release upload: the multipart body is streamed straight into the artifact
 * store (constant memory), then the release is recorded. The parts come
 * through the CSRF gate (guards.ts), which checks the token as soon as it
 * arrives; forms put it first, but a token sent after the file still counts:
 * the stored file is then removed again if the token or any other field is
 * wrong, so a refused upload leaves nothing behind.
 */
import type { Hono } from "hono";
import {
  EmptyUploadError,
  type StoredArtifact,
  UploadTooLargeError,
} from "../../src/storage/mod.ts";
import { recordKvError, recordUpload, recordUploadFailure } from "../../src/lib/metrics.ts";
import type { UploadFailureReason } from "../../src/lib/metrics.ts";
import {
  ConflictError,
  createRelease,
  validateReleaseFields,
  ValidationError,
} from "../../src/store/mod.ts";
import { audit, redirectWithFlash } from "../context.ts";
import { humanBytes } from "../format.ts";
import { formErrorOf } from "../forms.ts";
import { CsrfError, streamedForm } from "../guards.ts";
import { MultipartError } from "../multipart.ts";
import type { AdminEnv, AppDeps, FormError } from "../types.ts";
import { EMPTY_UPLOAD_FORM, type UploadValues } from "../views/project.tsx";
import { loadProject, renderProjectPage } from "./project_page.tsx";

/** Room for the form fields next to the file when judging Content-Length. */
const FIELDS_ALLOWANCE_BYTES = 1024 * 1024;
const MAX_FIELD_BYTES = 512 * 1024;
const TEXT_FIELDS = ["version", "build", "release_notes"] as const;

export function addUploadRoute(admin: Hono<AdminEnv>, deps: AppDeps): void {
  const { kv, config, artifacts } = deps;

  admin.post("/projects/:slug/releases", streamedForm, async (c) => {
    const project = await loadProject(deps, c.req.param("slug"));
    const values: UploadValues = { ...EMPTY_UPLOAD_FORM };
    const refuse = (status: 400 | 413, error: FormError, reason: UploadFailureReason) => {
      recordUploadFailure(reason);
      return renderProjectPage(c, deps, project, { upload: values, uploadError: error }, status);
    };
    const tooLarge = () =>
      refuse(413, {
        field: "file",
        message: `The file is larger than the upload limit of ${
          humanBytes(config.maxUploadBytes)
        } (${config.maxUploadBytes} bytes).`,
      }, "too_large");

    const parts = c.get("parts");
    if (parts === undefined) {
      return refuse(
        400,
        { field: "file", message: "Send the release as multipart/form-data." },
        "invalid",
      );
    }
    const declared = Number(c.req.header("content-length") ?? NaN);
    if (declared > config.maxUploadBytes + FIELDS_ALLOWANCE_BYTES) {
      await c.req.raw.body?.cancel().catch(() => {});
      return tooLarge();
    }

    let stored: StoredArtifact | null = null;
    let file: { filename: string; contentType: string | undefined } | null = null;
    try {
      for await (const part of parts) {
        if (part.name === "file" && stored === null) {
          // An empty file is reported after the token check, like every other field error.
          stored = await artifacts.save(part.body, config.maxUploadBytes).catch((error) => {
            if (error instanceof EmptyUploadError) return null;
            throw error;
          });
          file = stored && { filename: part.filename ?? "", contentType: part.contentType };
        } else if ((TEXT_FIELDS as readonly string[]).includes(part.name)) {
          values[part.name as typeof TEXT_FIELDS[number]] = await part.text(MAX_FIELD_BYTES);
        }
      }
      const fields = validateReleaseFields(values);
      if (stored === null || file === null) throw new EmptyUploadError();
      const release = await createRelease(kv, {
        project_id: project.id,
        ...fields,
        filename: file.filename,
        content_type: file.contentType,
        ...stored,
      }).catch((error) => {
        if (!(error instanceof ValidationError || error instanceof ConflictError)) {
          recordKvError("admin");
        }
        throw error;
      });
      recordUpload(release.size_bytes);
      await audit(
        c,
        deps,
        "release.upload",
        `release ${release.id}`,
        `project ${project.slug}; version ${release.version}; ${release.filename}; ` +
          `${release.size_bytes} bytes; sha256 ${release.checksum_sha256}`,
      );
      return redirectWithFlash(c, deps, `/admin/projects/${project.slug}`, {
        kind: "success",
        text: `Release ${release.version}${
          release.build ? ` (build ${release.build})` : ""
        } was uploaded: ${release.filename}, ${
          humanBytes(release.size_bytes)
        }, SHA-256 ${release.checksum_sha256}.`,
      });
    } catch (error) {
      if (stored !== null) await artifacts.remove(stored.storage_key);
      if (error instanceof UploadTooLargeError) return tooLarge();
      if (error instanceof EmptyUploadError) {
        return refuse(400, {
          field: "file",
          message: "Choose a file: file is required and must not be empty.",
        }, "empty");
      }
      if (error instanceof ValidationError) {
        return refuse(400, formErrorOf(error), "invalid");
      }
      if (error instanceof MultipartError) {
        return refuse(400, {
          field: "file",
          message: `The upload could not be read: ${error.message}.`,
        }, "invalid");
      }
      // A wrong CSRF token is a refused form; anything else failed on our side.
      recordUploadFailure(error instanceof CsrfError ? "invalid" : "error");
      throw error;
    }
  });
}
