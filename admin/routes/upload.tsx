/**
 * Release upload: the multipart body is streamed straight into the artifact
 * store (constant memory), then the release is recorded. The parts come
 * through the CSRF gate (guards.ts), which checks the token as soon as it
 * arrives; forms put it first, but a token sent after the file still counts:
 * the stored file is then removed again if the token or any other field is
 * wrong, so a refused upload leaves nothing behind. Receiving (`receiveForm`),
 * recording (`recordRelease`), both through the receiver every upload shares
 * (src/storage/upload.ts), and mapping errors to form errors
 * (`uploadRefusal`) are separate pieces; the route only puts them in order.
 */
import { sparkleSignature, tauriSignature } from "../../src/feeds/signatures.ts";
import type { Hono } from "hono";
import {
  EmptyUploadError,
  type ReceivedFile,
  receiveUpload,
  recordUpload,
  StorageFullError,
  StorageUnavailableError,
  UploadTooLargeError,
} from "../../src/storage/mod.ts";
import type { UploadFailureReason } from "../../src/lib/metrics.ts";
import {
  getProjectBySlug,
  listProjectsPage,
  type Project,
  type Release,
  requireMediaType,
  validateReleaseFields,
  ValidationError,
} from "../../src/store/mod.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { isSlug } from "../../src/lib/limits.ts";
import { UploadPage } from "../views/upload_page.tsx";
import { humanBytes } from "../format.ts";
import { formErrorOf } from "../forms.ts";
import { CsrfError, streamedForm } from "../guards.ts";
import { MultipartError, type MultipartPart } from "../../src/http/multipart.ts";
import type { AdminEnv, FormError, ServiceDeps } from "../types.ts";
import {
  EMPTY_UPLOAD_FORM,
  UPLOAD_TEXT_FIELDS,
  uploadChoices,
  type UploadValues,
} from "../forms_upload.ts";
import { loadProject, renderProjectPage } from "./project_page.tsx";

/** Room for the form fields next to the file when judging Content-Length. */
const FIELDS_ALLOWANCE_BYTES = 1024 * 1024;
const MAX_FIELD_BYTES = 512 * 1024;

/** Projects offered on the upload page (active ones, by name). */
const UPLOAD_PAGE_PROJECTS = 500;

/**
 * The upload forms' CSRF check on the stream (guards.ts `streamedForm`); registered before the
 * gated routes' `requireCsrfToken` (mod.ts), so their bodies are never buffered.
 */
export function addUploadStreams(admin: Hono<AdminEnv>): void {
  admin.post("/upload", streamedForm);
  admin.post("/projects/:slug/releases", streamedForm);
}

export function addUploadRoute(admin: Hono<AdminEnv>, deps: ServiceDeps): void {
  const { config } = deps;

  /** The upload page: the dashboard's "Upload a release", with a project field. */
  async function renderUploadPage(
    c: AdminContext,
    form: { project: string; upload: UploadValues; error?: FormError; status?: number },
  ): Promise<Response> {
    const page = await listProjectsPage(deps.kv, {
      limit: UPLOAD_PAGE_PROJECTS,
      cursor: {},
      maxScan: UPLOAD_PAGE_PROJECTS + 1,
      match: (project) => project.state === "active",
    });
    return c.html(
      <UploadPage
        ctx={pageContext(c, deps)}
        projects={page.rows}
        project={form.project}
        maxUploadBytes={config.maxUploadBytes}
        upload={form.upload}
        uploadError={form.error}
      />,
      (form.status ?? 200) as 200,
    );
  }

  admin.get("/upload", (c) =>
    renderUploadPage(c, {
      project: (c.req.query("project") ?? "").slice(0, 64),
      upload: EMPTY_UPLOAD_FORM,
    }));

  // The same upload as a project's, with the project chosen in the form (any order of parts).
  admin.post("/upload", (c) => {
    const values: UploadValues = { ...EMPTY_UPLOAD_FORM };
    const chosen = { value: "" };
    return runUpload(c, {
      refuse: ({ status, error }) =>
        renderUploadPage(c, { project: chosen.value, upload: values, error, status }),
      receive: async (parts) => {
        const received = await receiveForm(deps, takeField(parts, "project", chosen), values);
        const slug = chosen.value.trim();
        const project = isSlug(slug) ? await getProjectBySlug(deps.kv, slug) : null;
        if (project === null) {
          if (received !== null) {
            await deps.artifacts.remove(received.stored.storage_key);
            deps.artifacts.settle?.(received.stored.storage_key);
          }
          return {
            status: 400,
            error: { field: "project", message: "Choose the project the release belongs to." },
            reason: "invalid",
          };
        }
        return { project, release: await recordRelease(deps, project.id, { values, received }) };
      },
    });
  });

  /**
   * The steps both upload forms share: a body that is not multipart, or declares
   * more than the limit allows, is refused before any byte is stored; what
   * `receive` throws becomes a refusal where it is the sender's fault, and is
   * counted and rethrown (to the admin error page) where it is ours.
   */
  async function runUpload(
    c: AdminContext,
    { refuse, receive }: {
      refuse: (refusal: UploadRefusal) => Promise<Response>;
      receive: (
        parts: AsyncIterable<MultipartPart>,
      ) => Promise<{ project: Project; release: Release } | UploadRefusal>;
    },
  ): Promise<Response> {
    const refuseCounted = (refusal: UploadRefusal) => {
      deps.metrics.recordUploadFailure(refusal.reason);
      return refuse(refusal);
    };
    const parts = c.get("parts");
    if (parts === undefined) return refuseCounted(NOT_MULTIPART);
    const declared = Number(c.req.header("content-length") ?? NaN);
    if (declared > config.maxUploadBytes + FIELDS_ALLOWANCE_BYTES) {
      await c.req.raw.body?.cancel().catch(() => {});
      return refuseCounted(tooLarge(config.maxUploadBytes));
    }
    let outcome: { project: Project; release: Release } | UploadRefusal;
    try {
      outcome = await receive(parts);
    } catch (error) {
      const refusal = uploadRefusal(error, config.maxUploadBytes);
      if (refusal !== null) return refuseCounted(refusal);
      // A wrong CSRF token is a refused form; anything else failed on our side.
      deps.metrics.recordUploadFailure(error instanceof CsrfError ? "invalid" : "error");
      throw error;
    }
    return "release" in outcome ? uploaded(c, outcome) : refuseCounted(outcome);
  }

  /** Audits an upload and sends the admin to the project's page. */
  async function uploaded(
    c: AdminContext,
    { project, release }: { project: Project; release: Release },
  ): Promise<Response> {
    deps.metrics.recordUpload(release.size_bytes);
    await audit(c, deps, {
      action: "release.upload",
      target: `release ${release.id}`,
      details: `project ${project.slug}; version ${release.version}; ${release.filename}; ` +
        `${release.size_bytes} bytes; sha256 ${release.checksum_sha256}`,
    });
    return redirectWithFlash(c, deps, {
      location: `/admin/projects/${project.slug}`,
      kind: "success",
      text: `Release ${release.version}${
        release.build ? ` (build ${release.build})` : ""
      } was uploaded: ${release.filename}, ${
        humanBytes(release.size_bytes)
      }, SHA-256 ${release.checksum_sha256}.`,
    });
  }

  admin.post("/projects/:slug/releases", async (c) => {
    const project = await loadProject(deps, c.req.param("slug"));
    const values: UploadValues = { ...EMPTY_UPLOAD_FORM };
    return runUpload(c, {
      refuse: ({ status, error }) =>
        renderProjectPage(c, deps, { project, upload: values, uploadError: error, status }),
      receive: async (parts) => {
        const received = await receiveForm(deps, parts, values);
        return { project, release: await recordRelease(deps, project.id, { values, received }) };
      },
    });
  });
}

/** The parts without the text field `name`, whose value goes to `into`. */
async function* takeField(
  parts: AsyncIterable<MultipartPart>,
  name: string,
  into: { value: string },
): AsyncGenerator<MultipartPart> {
  for await (const part of parts) {
    if (part.name === name) into.value = await part.text(MAX_FIELD_BYTES);
    else yield part;
  }
}

/**
 * Receiving (the shared receiver, src/storage/upload.ts): the file into the
 * artifact store, the form's text fields into `values`, other parts skipped.
 */
function receiveForm(
  deps: ServiceDeps,
  parts: AsyncIterable<MultipartPart>,
  values: UploadValues,
): Promise<ReceivedFile | null> {
  return receiveUpload(parts, {
    artifacts: deps.artifacts,
    maxBytes: deps.config.maxUploadBytes,
    onPart: async (part) => {
      if ((UPLOAD_TEXT_FIELDS as readonly string[]).includes(part.name)) {
        values[part.name as keyof UploadValues] = await part.text(MAX_FIELD_BYTES);
      }
    },
  });
}

/** Checks the fields and commits the release; on any refusal or failure removes the stored file. */
async function recordRelease(
  deps: ServiceDeps,
  projectId: number,
  { values, received }: { values: UploadValues; received: ReceivedFile | null },
): Promise<Release> {
  const recorded = await recordUpload(deps.kv, deps.artifacts, {
    file: received,
    build: (file) => {
      const fields = validateReleaseFields(values);
      const signatures = {
        tauri_signature: tauriSignature(values.tauri_signature),
        sparkle_signature: sparkleSignature(values.sparkle_signature),
      };
      if (file === null) throw new EmptyUploadError();
      return {
        release: {
          project_id: projectId,
          ...fields,
          filename: file.filename ?? "",
          content_type: requireMediaType("file", file.contentType),
          ...file.stored,
          ...signatures,
          ...uploadChoices(values),
        },
      };
    },
    onKvError: () => deps.metrics.recordKvError("admin"),
  });
  return recorded.release;
}

interface UploadRefusal {
  status: 400 | 413 | 503 | 507;
  error: FormError;
  reason: UploadFailureReason;
}

const NOT_MULTIPART: UploadRefusal = {
  status: 400,
  error: { field: "file", message: "Send the release as multipart/form-data." },
  reason: "invalid",
};

function tooLarge(maxBytes: number): UploadRefusal {
  return {
    status: 413,
    error: {
      field: "file",
      message: `The file is larger than the upload limit of ${
        humanBytes(maxBytes)
      } (${maxBytes} bytes).`,
    },
    reason: "too_large",
  };
}

/** Mapping errors to form errors: the refusal a person can fix, or null for a failure of ours. */
function uploadRefusal(error: unknown, maxBytes: number): UploadRefusal | null {
  if (error instanceof UploadTooLargeError) return tooLarge(maxBytes);
  if (error instanceof StorageFullError) {
    return {
      status: 507,
      error: {
        field: "file",
        message: "The server's storage ran out of space while the file was written. " +
          "Nothing was stored; free some space (or ask the operator to) and upload again.",
      },
      reason: "storage_full",
    };
  }
  if (error instanceof StorageUnavailableError) {
    return {
      status: 503,
      error: {
        field: "file",
        message: "The artifact storage did not answer, so nothing was stored. " +
          "Try again in a minute; if it keeps happening, ask the operator to check the storage.",
      },
      reason: "storage_unavailable",
    };
  }
  if (error instanceof EmptyUploadError) {
    return {
      status: 400,
      error: { field: "file", message: "Choose a file: a file is required and must not be empty." },
      reason: "empty",
    };
  }
  if (error instanceof ValidationError) {
    return { status: 400, error: formErrorOf(error), reason: "invalid" };
  }
  if (error instanceof MultipartError) {
    return {
      status: 400,
      error: { field: "file", message: `The upload could not be read: ${error.message}.` },
      reason: "invalid",
    };
  }
  return null;
}
