/**
 * Release upload: the multipart body is streamed straight into the artifact
 * store (constant memory), then the release is recorded. The parts come
 * through the CSRF gate (guards.ts), which checks the token as soon as it
 * arrives; forms put it first, but a token sent after the file still counts:
 * the stored file is then removed again if the token or any other field is
 * wrong, so a refused upload leaves nothing behind. Receiving (`receiveForm`),
 * recording (`recordRelease`), both through the receiver every upload shares
 * (src/storage/upload.ts) and the one rule of a release from an upload
 * (src/publishing/release_upload.ts), and mapping errors to form errors
 * (`uploadRefusal`) are separate pieces; the route only puts them in order.
 */
import type { Store } from "../../src/kv/store.ts";
import type { Hono } from "hono";
import { type ErrorKind, mapDomainError, uploadFailureReason } from "../../src/http/errors.ts";
import {
  declaresTooMuch,
  MAX_FIELD_BYTES,
  releaseFromUpload,
} from "../../src/publishing/release_upload.ts";
import {
  type ReceivedFile,
  receiveUpload,
  recordUpload,
  UploadTooLargeError,
} from "../../src/storage/mod.ts";
import type { UploadFailureReason } from "../../src/lib/metrics.ts";
import type { ValidationError } from "../../src/kv/errors.ts";
import { getProjectBySlug, listProjectsPage } from "../../src/projects/projects.ts";
import type { Project } from "../../src/projects/types.ts";
import type { Release } from "../../src/releases/types.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { isSlug } from "../../src/lib/limits.ts";
import { UploadPage } from "../views/upload_page.tsx";
import { humanBytes } from "../format.ts";
import { streamedForm } from "../guards.ts";
import { formErrorOf } from "../forms.ts";
import type { MultipartPart } from "../../src/http/multipart.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import {
  checkedAsFlags,
  EMPTY_UPLOAD_FORM,
  UPLOAD_TEXT_FIELDS,
  type UploadValues,
} from "../forms_upload.ts";
import { loadProject, renderProjectPage } from "./project_page.tsx";

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

export function addUploadRoute(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  const { config } = deps;

  /** The upload page: the dashboard's "Upload a release", with a project field. */
  async function renderUploadPage(
    c: AdminContext,
    form: { project: string; upload: UploadValues; error?: FormError; status?: number },
  ): Promise<Response> {
    const page = await listProjectsPage(c.var.store, {
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
        const project = isSlug(slug) ? await getProjectBySlug(c.var.store, slug) : null;
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
        return {
          project,
          release: await recordRelease({ ...deps, store: c.var.store }, project.id, {
            values,
            received,
          }),
        };
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
    if (declaresTooMuch(c.req.header("content-length"), config.maxUploadBytes)) {
      await c.req.raw.body?.cancel().catch(() => {});
      return refuseCounted(uploadRefusal(new UploadTooLargeError(config.maxUploadBytes))!);
    }
    let outcome: { project: Project; release: Release } | UploadRefusal;
    try {
      outcome = await receive(parts);
    } catch (error) {
      const refusal = uploadRefusal(error);
      if (refusal !== null) return refuseCounted(refusal);
      // Not the form's to show (a wrong CSRF token, a failure of ours): the error page.
      deps.metrics.recordUploadFailure(uploadFailureReason(error));
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
    const project = await loadProject(c.var.store, c.req.param("slug"));
    const values: UploadValues = { ...EMPTY_UPLOAD_FORM };
    return runUpload(c, {
      refuse: ({ status, error }) =>
        renderProjectPage(c, deps, { project, upload: values, uploadError: error, status }),
      receive: async (parts) => {
        const received = await receiveForm(deps, parts, values);
        return {
          project,
          release: await recordRelease({ ...deps, store: c.var.store }, project.id, {
            values,
            received,
          }),
        };
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
  deps: RouteDeps,
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

/**
 * Checks the fields and commits the release through `deps.store` (the request's, whose commit
 * carries its audit entry); on any refusal or failure removes the stored file.
 */
async function recordRelease(
  deps: RouteDeps & { store: Store },
  projectId: number,
  { values, received }: { values: UploadValues; received: ReceivedFile | null },
): Promise<Release> {
  const recorded = await recordUpload(deps.store, deps.artifacts, {
    file: received,
    build: (file) => releaseFromUpload(projectId, { values: checkedAsFlags(values), file }),
    onKvError: () => deps.metrics.recordKvError("admin"),
  });
  return recorded.release;
}

interface UploadRefusal {
  /** The statuses the map gives the kinds of FORM_MESSAGES. */
  status: 400 | 413 | 503 | 507;
  error: FormError;
  reason: UploadFailureReason;
}

const NOT_MULTIPART: UploadRefusal = {
  status: 400,
  error: { field: "file", message: "Send the release as multipart/form-data." },
  reason: "invalid",
};

/**
 * What the form says of an error the service's map (src/http/errors.ts) knows
 * as a refusal a person can fix; the kinds not here are not the form's to show.
 */
const FORM_MESSAGES: Partial<Record<ErrorKind, (error: Error) => FormError>> = {
  too_large: (error) => {
    const { maxBytes } = error as UploadTooLargeError;
    return {
      field: "file",
      message: `The file is larger than the upload limit of ${
        humanBytes(maxBytes)
      } (${maxBytes} bytes).`,
    };
  },
  storage_full: () => ({
    field: "file",
    message: "The server's storage ran out of space while the file was written. " +
      "Nothing was stored; free some space (or ask the operator to) and upload again.",
  }),
  storage_unavailable: () => ({
    field: "file",
    message: "The artifact storage did not answer, so nothing was stored. " +
      "Try again in a minute; if it keeps happening, ask the operator to check the storage.",
  }),
  empty_upload: () => ({
    field: "file",
    message: "Choose a file: a file is required and must not be empty.",
  }),
  invalid: (error) => formErrorOf(error as ValidationError),
  unreadable_upload: (error) => ({
    field: "file",
    message: `The upload could not be read: ${error.message}.`,
  }),
};

/** Mapping errors to form errors: the refusal a person can fix, or null for the error page. */
function uploadRefusal(error: unknown): UploadRefusal | null {
  const mapped = mapDomainError(error);
  const message = mapped === null ? undefined : FORM_MESSAGES[mapped.kind];
  if (mapped === null || message === undefined) return null;
  return {
    status: mapped.status as UploadRefusal["status"],
    error: message(error as Error),
    reason: uploadFailureReason(error),
  };
}
