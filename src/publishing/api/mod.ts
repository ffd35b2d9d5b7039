/**
 * The publishing API (docs/publishing.md): a JSON API for release pipelines,
 * mounted at /publish/v1 by app.ts in front of the admin UI, so that none
 * of the UI's session and CSRF gates apply to it. Its one gate is the publish
 * token (auth.ts): `Authorization: Bearer udp_…`, no cookies, no CSRF token.
 * Every answer is JSON, errors included (errors.ts); a path no route knows is
 * a JSON 404 here too, never the UI's page or its sign-in redirect.
 * tests/admin_gates_test.ts accounts for these routes as token-gated.
 */
import { type Context, Hono } from "hono";
import { ApiError } from "../../http/errors.ts";
import { jsonResponse } from "../../http/json.ts";
import { multipartBoundary, readMultipart } from "../../http/multipart.ts";
import { ID_PATTERN } from "../../lib/limits.ts";
import { tokenMay } from "../../credentials/tokens.ts";
import { type AuditAction, recordAuditSafely, tokenActor } from "../../kv/audit.ts";
import { editRelease } from "../../edits/edits.ts";
import { createLoginThrottle } from "../../accounts/login_throttle.ts";
import { listProjects } from "../../projects/projects.ts";
import {
  getLatestReleaseId,
  listReleasePage,
  RELEASE_PAGE_MAX,
} from "../../releases/release_publishing.ts";
import { makeReleaseLatest, publishDraft, setReleaseState } from "../../releases/releases.ts";
import {
  changeRollout,
  completeRollout,
  endRollout,
  getRollout,
  startRollout,
} from "../../releases/rollouts.ts";
import type { Project } from "../../projects/types.ts";
import type { Release, Rollout, RolloutStep } from "../../releases/types.ts";
import { auditedStore } from "../../kv/audit.ts";
import type { ServiceDeps } from "../../http/app_env.ts";
import { publishTokenAuth } from "./auth.ts";
import { PUBLISH_RESPONSE_HEADERS, publishErrorResponse } from "./errors.ts";
import { onProject, onRelease } from "./route_gates.ts";
import { publishedProject, publishedRelease, tokenJson } from "./serialize.ts";
import type { PublishEnv } from "./types.ts";
import { uploadRelease } from "./upload.ts";
import { jsonLimit, jsonObject, refuseUnknownField } from "./json_body.ts";
import { addSafetyRoutes } from "./safety.ts";
import { declaresTooMuch, flag } from "../release_upload.ts";
import { UploadTooLargeError } from "../../storage/mod.ts";
import { addressOf } from "../../http/client_address.ts";
import { rolloutDetails } from "../../rollouts/audit_details.ts";

export function createPublishApi(deps: ServiceDeps): Hono<PublishEnv> {
  const api = new Hono<PublishEnv>();
  // Registered before the routes: Hono wraps each route with it when the app is mounted.
  api.onError((error) => publishErrorResponse(error));
  // The headers of every answer here, errors included.
  api.use(async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(PUBLISH_RESPONSE_HEADERS)) {
      c.res.headers.set(name, value);
    }
  });
  api.use(publishTokenAuth(deps, createLoginThrottle(deps.store)));
  // A token's changes carry their first audit entry in the same commit (src/kv/audit.ts).
  api.use(async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") {
      c.set("store", deps.store);
      return await next();
    }
    const request = {
      actor: tokenActor(c.get("publishToken")),
      address: addressOf(c, deps),
      what: `${c.req.method} ${c.req.path}`,
    };
    c.set("store", auditedStore(deps.store, request));
    await next();
  });

  const releaseBody = async (project: Project, release: Release) => ({
    project: publishedProject(project),
    release: publishedRelease(release, await getLatestReleaseId(deps.store, project.id)),
  });

  /** Audit-logs the token's change to `target`, in the route's project (its slug leads the details). */
  const audit = (
    c: Context<PublishEnv>,
    { action, target, details }: { action: AuditAction; target: string; details: string },
  ) =>
    recordAuditSafely(c.var.store, {
      actor: tokenActor(c.get("publishToken")),
      action,
      target,
      details: `project ${c.var.project.slug}; ${details}`,
      address: addressOf(c, deps),
    }, () => deps.metrics.recordKvError("admin"));

  api.get("/token", async (c) => {
    const token = c.get("publishToken");
    const projects = token.all_projects ? [] : await listProjects(c.var.store);
    const slugs = projects.filter((p) => token.project_ids.includes(p.id)).map((p) => p.slug);
    return jsonResponse({ token: tokenJson(token, slugs) });
  });

  api.get("/projects/:slug/releases", onProject(), async (c) => {
    const project = c.get("project");
    const limit = parseLimit(c.req.query("limit"));
    const cursor = c.req.query("cursor");
    if (cursor !== undefined && !ID_PATTERN.test(cursor)) {
      throw new ApiError(400, "cursor must be the next_cursor of the page before");
    }
    const page = await listReleasePage(c.var.store, project.id, {
      limit,
      before: cursor === undefined ? undefined : Number(cursor),
    });
    const latestId = await getLatestReleaseId(c.var.store, project.id);
    return jsonResponse({
      project: publishedProject(project),
      releases: page.releases.map((release) => publishedRelease(release, latestId)),
      next_cursor: page.next === null ? null : String(page.next),
    });
  });

  api.post("/projects/:slug/releases", onProject("upload"), async (c) => {
    const project = c.get("project");
    const boundary = multipartBoundary(c.req.header("content-type"));
    const body = c.req.raw.body;
    if (declaresTooMuch(c.req.header("content-length"), deps.config.maxUploadBytes)) {
      await body?.cancel().catch(() => {});
      throw new UploadTooLargeError(deps.config.maxUploadBytes);
    }
    if (boundary === null || body === null) {
      throw new ApiError(400, "send the release as multipart/form-data (curl -F)");
    }
    const { release, rollout } = await uploadRelease({ ...deps, store: c.var.store }, {
      projectId: project.id,
      parts: readMultipart(body, boundary),
      // Starting a rollout is a release_state change, here as on the rollout routes.
      mayStartRollout: tokenMay(c.get("publishToken"), "release_state"),
    });
    await audit(c, {
      action: "release.upload",
      target: `release ${release.id}`,
      details: `version ${release.version}; ${release.filename}; ` +
        `${release.size_bytes} bytes; sha256 ${release.checksum_sha256}`,
    });
    if (rollout !== null && "started" in rollout) {
      await auditRollout(c, "rollout.start", rolloutDetails(rollout.started));
    }
    // Published, but the rollout asked for did not start: the uploader is told why.
    const rolloutError = rollout !== null && "failed" in rollout
      ? {
        rollout_error: `the release was published (active, not the latest) but its rollout ` +
          `did not start: ${rollout.failed}; start it with POST /publish/v1/releases/` +
          `${release.id}/rollout`,
      }
      : {};
    return jsonResponse({ ...await releaseBody(project, release), ...rolloutError }, 201, {
      location: `/publish/v1/releases/${release.id}`,
    });
  });

  api.get("/releases/:id", onRelease(), async (c) => {
    const { project, release } = c.var;
    return jsonResponse(await releaseBody(project, release));
  });

  api.patch("/releases/:id", jsonLimit, onRelease("upload"), textEdit, async (c) => {
    const { project, release } = c.var;
    const edit = c.req.valid("json");
    const { after: edited } = await editRelease(c.var.store, release.id, edit);
    await audit(c, {
      action: "release.edit",
      target: `release ${edited.id}`,
      details: Object.keys(edit).join(", "),
    });
    return jsonResponse(await releaseBody(project, edited));
  });

  for (const [action, state] of [["archive", "archived"], ["activate", "active"]] as const) {
    api.post(`/releases/:id/${action}`, onRelease("release_state"), async (c) => {
      const { project, release } = c.var;
      const changed = await setReleaseState(c.var.store, release.id, state);
      await audit(c, {
        action: `release.${action}`,
        target: `release ${changed.id}`,
        details: `version ${release.version}`,
      });
      return jsonResponse(await releaseBody(project, changed));
    });
  }

  api.post("/releases/:id/publish", onRelease("release_state"), async (c) => {
    const { project, release } = c.var;
    if (release.state !== "draft") {
      throw new ApiError(409, `the release is ${release.state}, not a draft`);
    }
    const makeLatest = !flag("not_latest", c.req.query("not_latest"));
    const published = await publishDraft(c.var.store, release.id, { makeLatest });
    await audit(c, {
      action: "release.publish",
      target: `release ${published.id}`,
      details: `version ${release.version}${makeLatest ? "" : "; not latest"}`,
    });
    return jsonResponse(await releaseBody(project, published));
  });

  api.post("/releases/:id/make-latest", onRelease("release_state"), async (c) => {
    const { project, release } = c.var;
    const chosen = await makeReleaseLatest(c.var.store, release.id);
    await audit(c, {
      action: "release.make_latest",
      target: `release ${chosen.id}`,
      details: `version ${release.version}`,
    });
    return jsonResponse(await releaseBody(project, chosen));
  });

  // Staged rollouts (docs/rollouts.md): start one for a release, then halt,
  // resume, widen (PATCH), complete or end it through its project.
  const rolloutJson = (rollout: Rollout | null) =>
    jsonResponse({ rollout: publishedRollout(rollout) });
  /** Audit-logs a change to the rollout of the route's project. */
  const auditRollout = (c: Context<PublishEnv>, action: AuditAction, details: string) =>
    audit(c, { action, target: `project ${c.var.project.id}`, details });

  api.post(
    "/releases/:id/rollout",
    jsonLimit,
    onRelease("release_state"),
    rolloutBody,
    async (c) => {
      const { release } = c.var;
      const body = c.req.valid("json");
      if (body.percentage === undefined) throw new ApiError(400, "percentage is required");
      const rollout = await startRollout(c.var.store, release.id, {
        ...body,
        percentage: body.percentage,
      });
      await auditRollout(c, "rollout.start", rolloutDetails(rollout));
      return rolloutJson(rollout);
    },
  );

  api.get("/projects/:slug/rollout", onProject(), async (c) => {
    const project = c.get("project");
    return rolloutJson(await getRollout(c.var.store, project.id));
  });

  api.patch(
    "/projects/:slug/rollout",
    jsonLimit,
    onProject("release_state"),
    rolloutBody,
    async (c) => {
      const project = c.get("project");
      const body = c.req.valid("json");
      const rollout = await changeRollout(c.var.store, project.id, body);
      await auditRollout(c, "rollout.change", rolloutDetails(rollout));
      return rolloutJson(rollout);
    },
  );

  for (const [action, halted] of [["halt", true], ["resume", false]] as const) {
    api.post(`/projects/:slug/rollout/${action}`, onProject("release_state"), async (c) => {
      const project = c.get("project");
      const rollout = await changeRollout(c.var.store, project.id, { halted });
      await auditRollout(c, `rollout.${action}`, rolloutDetails(rollout));
      return rolloutJson(rollout);
    });
  }

  api.post("/projects/:slug/rollout/complete", onProject("release_state"), async (c) => {
    const project = c.get("project");
    const release = await completeRollout(c.var.store, project.id);
    await auditRollout(c, "rollout.complete", `release ${release.id} is latest`);
    return jsonResponse(await releaseBody(project, release));
  });

  api.post("/projects/:slug/rollout/end", onProject("release_state"), async (c) => {
    const project = c.get("project");
    const ended = await endRollout(c.var.store, project.id);
    await auditRollout(c, "rollout.end", ended === null ? "none" : rolloutDetails(ended));
    return rolloutJson(null);
  });

  // Release safety (docs/rollouts.md "Health gates"): gates, roll back, release policy.
  addSafetyRoutes(api, auditRollout);

  // Anything else under the prefix: a JSON 404 (the token is checked first, like every route).
  api.all("*", () => {
    throw new ApiError(404, "no such publishing API route; see docs/publishing.md");
  });
  return api;
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return 20;
  if (!/^\d{1,3}$/.test(raw) || Number(raw) < 1 || Number(raw) > RELEASE_PAGE_MAX) {
    throw new ApiError(400, `limit must be a number from 1 to ${RELEASE_PAGE_MAX}`);
  }
  return Number(raw);
}

/** A rollout in the publishing API's answers (null: none); ids are numbers, as a release's `id`. */
function publishedRollout(rollout: Rollout | null) {
  return rollout === null ? null : {
    release_id: rollout.release_id,
    previous_id: rollout.previous_id,
    percentage: rollout.percentage,
    schedule: rollout.schedule,
    halted: rollout.halted,
    tester_tag: rollout.tester_tag,
    started_at: rollout.started_at,
    updated_at: rollout.updated_at,
  };
}

/** The fields of a rollout start or change. */
const ROLLOUT_BODY_FIELDS = ["percentage", "schedule", "tester_tag"] as const;

/** The JSON body of a rollout start or change: percentage, schedule, tester_tag; nothing else. */
const rolloutBody = jsonObject('{"percentage": 10}', (fields) => {
  for (const name of Object.keys(fields)) refuseUnknownField(name, ROLLOUT_BODY_FIELDS);
  const { percentage, schedule, tester_tag } = fields;
  if (percentage !== undefined && typeof percentage !== "number") {
    throw new ApiError(400, "percentage must be a number from 0 to 100");
  }
  if (schedule !== undefined && !Array.isArray(schedule)) {
    throw new ApiError(400, 'schedule must be a list of {"at": TIME, "percentage": NUMBER}');
  }
  if (tester_tag !== undefined && tester_tag !== null && typeof tester_tag !== "string") {
    throw new ApiError(400, "tester_tag must be a string or null");
  }
  const body: { percentage?: number; schedule?: RolloutStep[]; tester_tag?: string | null } = {
    ...(percentage === undefined ? {} : { percentage }),
    ...(schedule === undefined ? {} : { schedule: schedule as RolloutStep[] }),
    ...(tester_tag === undefined ? {} : { tester_tag }),
  };
  return body;
});

/** The fields of an edit. */
const EDIT_FIELDS = ["build", "release_notes"] as const;

/** The JSON body of an edit: `build` and/or `release_notes`, strings; nothing else. */
const textEdit = jsonObject('{"release_notes": "…"}', (fields) => {
  const edit: { build?: string; release_notes?: string } = {};
  for (const [name, value] of Object.entries(fields)) {
    refuseUnknownField(name, EDIT_FIELDS, "editable");
    if (typeof value !== "string") throw new ApiError(400, `${name} must be a string`);
    edit[name] = value;
  }
  if (Object.keys(edit).length === 0) {
    throw new ApiError(400, "nothing to change: send build and/or release_notes");
  }
  return edit;
});
