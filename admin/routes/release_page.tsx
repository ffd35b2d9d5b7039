/**
 * One release's page: correct its version, build and notes, download its
 * file, delete it (with its artifact; the latest only when confirmed).
 */
import type { Store } from "../../src/kv/store.ts";
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import {
  ADMIN_DOWNLOAD_CONTENT_TYPE,
  contentDisposition,
  DOWNLOAD_CONTENT_SECURITY_POLICY,
} from "../../src/http/content_disposition.ts";
import { deleteRelease } from "../../src/lifecycle/delete.ts";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import { LatestReleaseError } from "../../src/lifecycle/delete_records.ts";
import { getReleaseDelivery } from "../../src/stats/delivery.ts";
import { editRelease, getReleaseVersioned } from "../../src/edits/edits.ts";
import { NotFoundError } from "../../src/kv/errors.ts";
import { getProject } from "../../src/projects/projects.ts";
import {
  duplicateActiveVersions,
  getDownloadCounts,
  getLatestRelease,
  listReleasesByProject,
} from "../../src/releases/releases.ts";
import type { Release } from "../../src/releases/types.ts";
import { describeChanges } from "../audit_changes.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { reshowRefusedEdit } from "../edit_refusal.ts";
import { field } from "../forms.ts";
import type { ReleaseEditValues } from "../forms_upload.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import { ReleasePage, type ReleasePageProps } from "../views/release_page.tsx";
import { projectTabPath } from "../views/project.tsx";
import { loadReleaseMarks } from "./project_page.tsx";

/** The fields an edit can change, in the order the audit names them. */
const EDITED_FIELDS = ["version", "build", "release_notes"] as const;

export function addReleasePageRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  async function load(store: Store, raw: string) {
    const found = ID_PATTERN.test(raw) ? await getReleaseVersioned(store, Number(raw)) : null;
    if (found === null) throw new HTTPException(404, { message: `There is no release ${raw}.` });
    return found;
  }

  async function render(
    c: AdminContext,
    found: { value: Release; version: string },
    { status = 200, ...form }:
      & Partial<
        Omit<ReleasePageProps, "ctx" | "release" | "project" | "version" | "latest" | "marks">
      >
      & { status?: 200 | 400 | 409 } = {},
  ): Promise<Response> {
    const release = found.value;
    const [project, latest, counts, delivery, marks] = await Promise.all([
      getProject(c.var.store, release.project_id),
      getLatestRelease(c.var.store, release.project_id),
      getDownloadCounts(c.var.store, [release.id]),
      getReleaseDelivery(c.var.store, release.id),
      loadReleaseMarks(c.var.store, release.project_id),
    ]);
    return c.html(
      <ReleasePage
        ctx={pageContext(c, deps)}
        release={release}
        project={project}
        version={found.version}
        latest={latest?.id === release.id}
        marks={marks}
        downloads={counts.get(release.id) ?? 0}
        delivery={delivery}
        edit={form.edit ?? valuesOf(release)}
        {...form}
      />,
      status,
    );
  }

  admin.get("/releases/:id", async (c) => render(c, await load(c.var.store, c.req.param("id"))));

  admin.post("/releases/:id", async (c) => {
    const found = await load(c.var.store, c.req.param("id"));
    const form = c.get("form");
    const edit: ReleaseEditValues = {
      version: field(form, "version"),
      build: field(form, "build"),
      release_notes: field(form, "release_notes"),
    };
    try {
      const { before, after } = await editRelease(c.var.store, found.value.id, {
        ...edit,
        expected: field(form, "expected_version"),
      });
      const project = await getProject(c.var.store, after.project_id);
      await audit(c, deps, {
        action: "release.update",
        target: `release ${after.id}`,
        details: `project ${project?.slug ?? after.project_id}; ${
          describeChanges(before, after, EDITED_FIELDS)
        }`,
      });
      const siblings = await listReleasesByProject(c.var.store, after.project_id);
      const duplicate = after.state === "active" &&
        duplicateActiveVersions(siblings).includes(after.version);
      return redirectWithFlash(c, deps, {
        location: project
          ? `${projectTabPath(project.slug, "releases")}#releases`
          : `/admin/releases/${after.id}`,
        kind: "success",
        text: `Release ${after.version} was saved.${
          duplicate
            ? ` Another active release also has version ${after.version}: clients get the newest upload of them.`
            : ""
        }`,
      });
    } catch (error) {
      return await reshowRefusedEdit<Release>(
        error,
        (current, refusal) => render(c, current ?? found, { edit, ...refusal }),
      );
    }
  });

  admin.post("/releases/:id/delete", async (c) => {
    const found = await load(c.var.store, c.req.param("id"));
    const allowLatest = field(c.get("form"), "confirm_latest") === "on";
    let result;
    try {
      result = await deleteRelease({ ...deps, store: c.var.store }, found.value.id, {
        allowLatest,
      });
    } catch (error) {
      if (error instanceof LatestReleaseError) {
        return await render(c, found, {
          deleteError: {
            field: "confirm_latest",
            message: `Release ${found.value.version} is the latest release: clients get it now. ` +
              "Tick the box to confirm that you want to delete it.",
          },
          status: 409,
        });
      }
      if (error instanceof NotFoundError) {
        throw new HTTPException(404, { message: `There is no release ${found.value.id}.` });
      }
      throw error;
    }
    const { release, downloads, leftForSweep } = result;
    const project = await getProject(c.var.store, release.project_id);
    await audit(c, deps, {
      action: "release.delete",
      target: `release ${release.id}`,
      details: `project ${project?.slug ?? release.project_id}; version ${release.version}; ` +
        `build ${release.build || "(none)"}; ${release.filename}; ${release.size_bytes} bytes; ` +
        `sha256 ${release.checksum_sha256}; state ${release.state}; ${downloads} downloads kept ` +
        `in the project's total${allowLatest ? "; was latest" : ""}${
          leftForSweep.length > 0 ? "; artifact left for the storage sweep" : ""
        }`,
    });
    return redirectWithFlash(c, deps, {
      location: project
        ? `${projectTabPath(project.slug, "releases")}#releases`
        : "/admin/projects",
      kind: "success",
      text: `Release ${release.version} and its file were deleted.`,
    });
  });

  admin.get("/releases/:id/download", async (c) => {
    const { value: release } = await load(c.var.store, c.req.param("id"));
    const artifact = await deps.artifacts.open(release.storage_key);
    if (artifact === null) {
      throw new HTTPException(404, { message: `The file of release ${release.id} is missing.` });
    }
    const body = await artifact.read(0, artifact.size);
    return new Response(body, {
      headers: {
        // Bytes, never the stored type: an uploaded script or page must not run on this origin.
        "content-type": ADMIN_DOWNLOAD_CONTENT_TYPE,
        "content-length": String(artifact.size),
        "content-disposition": contentDisposition(release.filename),
        "content-security-policy": DOWNLOAD_CONTENT_SECURITY_POLICY,
        "cache-control": "private, no-store",
      },
    });
  });
}

function valuesOf(release: Release): ReleaseEditValues {
  return { version: release.version, build: release.build, release_notes: release.release_notes };
}
