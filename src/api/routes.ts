/** The client JSON API under /api/v1 (client-api.md section 4). */
import { Hono } from "hono";
import { projectVisible } from "../store/access.ts";
import type { AppDeps, AppEnv } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { jsonBytes, jsonText } from "../http/json.ts";
import { ID_PATTERN, isSlug } from "../lib/limits.ts";
import { recordKvError } from "../lib/metrics.ts";
import {
  type ApiKey,
  countDownload,
  getLatestRelease,
  getProject,
  getProjectBySlug,
  getRelease,
  listProjects,
  type Project,
  type Release,
} from "../store/mod.ts";
import { apiKeyGate, rateLimitGate } from "./auth.ts";
import { type Delivery, serveArtifact } from "./download.ts";
import { openApiJson } from "./openapi.ts";
import { apiIndex, projectListBody, releaseEnvelopeBody } from "./serialize.ts";

const PROTECTED_HEADERS = {
  "cache-control": "no-store, private, max-age=0",
  pragma: "no-cache",
  expires: "0",
  vary: "Authorization",
  "x-robots-tag": "noindex, nofollow",
};

export function createApiRoutes(deps: AppDeps): Hono<AppEnv> {
  const { kv, config } = deps;
  const api = new Hono<AppEnv>();
  const delivery: Delivery = {
    mode: config.downloadMode,
    urlTtlSeconds: config.downloadUrlTtlSeconds,
    xAccelPrefix: config.xAccelPrefix,
  };
  const index = new TextEncoder().encode(JSON.stringify(apiIndex(deps.config.serviceName)));

  // Every response under /api/v1 (errors included) is private and uncacheable.
  if (deps.benchOff !== "headers") {
    api.use(async (c, next) => {
      await next();
      for (const [name, value] of Object.entries(PROTECTED_HEADERS)) c.res.headers.set(name, value);
    });
  }

  // Every /api/v1 request, known path or not, draws a token before any other check.
  api.use(rateLimitGate(deps));

  api.get("/", () => jsonBytes(index));

  // Public like the index, but not listed in it (the index lists the four key routes only).
  const openApi = openApiJson(deps.config.baseUrl);
  api.get("/openapi.json", () => jsonText(openApi));

  const gate = apiKeyGate(deps);

  api.get("/projects", gate, async (c) => {
    const key = c.get("apiKey");
    const projects = await listProjects(kv);
    return jsonBytes(projectListBody(key, projects, (project) => projectVisible(key, project)));
  });

  api.get("/projects/:slug/releases/latest", gate, async (c) => {
    const project = await findVisibleProjectBySlug(kv, c.get("apiKey"), c.req.param("slug"));
    const release = await getLatestRelease(kv, project.id);
    if (release === null || release.state !== "active") {
      throw new ApiError(404, API_ERRORS.releaseNotFound);
    }
    return jsonBytes(releaseEnvelopeBody(project, release));
  });

  api.get("/releases/:id", gate, async (c) => {
    const { project, release } = await findVisibleRelease(kv, c.get("apiKey"), c.req.param("id"));
    return jsonBytes(releaseEnvelopeBody(project, release));
  });

  api.get("/releases/:id/download", gate, async (c) => {
    const { release } = await findVisibleRelease(kv, c.get("apiKey"), c.req.param("id"));
    c.set("releaseId", release.id);
    const served = await serveArtifact(deps.artifacts, release, c.req.raw, delivery);
    if (served.countsAsDownload) {
      countDownload(kv, release.id).catch((error) => {
        recordKvError("download_count");
        console.error("download count failed:", error);
      });
    }
    return served.response;
  });

  // The API is read-only: known paths refuse other methods, unknown paths are 404.
  for (
    const path of [
      "/",
      "/projects",
      "/projects/:slug/releases/latest",
      "/releases/:id",
      "/releases/:id/download",
    ]
  ) {
    api.on(["POST", "PUT", "PATCH", "DELETE", "OPTIONS"], path, () => {
      throw new ApiError(405, API_ERRORS.methodNotAllowed, { allow: "GET, HEAD" });
    });
  }
  api.all("*", () => {
    throw new ApiError(404, API_ERRORS.resourceNotFound);
  });
  return api;
}

async function findVisibleProjectBySlug(kv: Deno.Kv, key: ApiKey, slug: string): Promise<Project> {
  // A slug that cannot exist is not looked up (and cannot overflow a KV key).
  const project = isSlug(slug) ? await getProjectBySlug(kv, slug) : null;
  if (!projectVisible(key, project)) throw new ApiError(404, API_ERRORS.resourceNotFound);
  return project;
}

/**
 * Parses a release id: anything but digits is the spec's 400; a number too
 * long to be an id (null) is simply not found.
 */
function parseReleaseId(raw: string): number | null {
  if (ID_PATTERN.test(raw)) return Number(raw);
  if (/^\d+$/.test(raw)) return null;
  throw new ApiError(400, API_ERRORS.invalidReleaseId);
}

async function findVisibleRelease(
  kv: Deno.Kv,
  key: ApiKey,
  rawId: string,
): Promise<{ project: Project; release: Release }> {
  const id = parseReleaseId(rawId);
  const release = id === null ? null : await getRelease(kv, id);
  if (release === null || release.state !== "active") {
    throw new ApiError(404, API_ERRORS.resourceNotFound);
  }
  const project = await getProject(kv, release.project_id);
  if (!projectVisible(key, project)) throw new ApiError(404, API_ERRORS.resourceNotFound);
  return { project, release };
}
