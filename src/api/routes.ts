/** The client JSON API under /api/v1 (../shared/spec/client-api.md "4. Endpoints"). */
import { type Context, type Handler, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { projectVisible } from "../store/access.ts";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError, isClientGone } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import type { ErrorMapper, Observer } from "../http/observe.ts";
import { ID_PATTERN, isSlug } from "../lib/limits.ts";
import { createApiResponder, setHeaders } from "../http/response_headers.ts";
import {
  type ApiKey,
  type Cached,
  countDownload,
  getLatestRelease,
  getProject,
  getProjectBySlug,
  getRelease,
  listProjects,
  type Project,
  type Release,
  thenRead,
} from "../store/mod.ts";
import { acceptedKey, rateLimitGate } from "./auth.ts";
import { type Delivery, serveArtifact } from "./download.ts";
import { openApiJson } from "./openapi.ts";
import { apiIndex, createProjectListBodies, releaseEnvelopeBody } from "./serialize.ts";

const encoder = new TextEncoder();

export interface ClientApi {
  /** The routes, to mount at /api/v1. */
  routes: Hono<AppEnv>;
  /**
   * The answer to a path under /api/v1 no route knows (a token drawn, then the
   * spec's 404), observed and mapped, for the app's not-found handler: a
   * catch-all route would match every API request too, and two handlers make
   * Hono compose them.
   */
  notFound: (c: Context<AppEnv>) => Cached<Response>;
}

/**
 * The client API. Its handlers are observed by a wrapper (`observer.endpoint`)
 * rather than a middleware (src/http/observe.ts: one frame less a request),
 * which also maps their errors to the API's JSON answers (`mapError` below):
 * the API's errors are mapped here and nowhere else.
 */
export function createApiRoutes(deps: ServiceDeps, observer: Observer): ClientApi {
  const { kv, config, metrics } = deps;
  const api = new Hono<AppEnv>();
  const respond = createApiResponder(deps.responseHeaders);
  const projectListBody = createProjectListBodies();
  const delivery: Delivery = {
    mode: config.downloadMode,
    urlTtlSeconds: config.downloadUrlTtlSeconds,
    xAccelPrefix: config.xAccelPrefix,
    xAccelSecret: config.xAccelSecret,
  };
  const index = encoder.encode(JSON.stringify(apiIndex(deps.config.serviceName)));
  const openApi = encoder.encode(openApiJson(deps.config.baseUrl));

  /** Every error of the client API as the contract's `{ "error": … }` with the protected headers. */
  const mapError: ErrorMapper = (error, c) => {
    const json = (data: unknown, status: number, headers?: Record<string, string>) =>
      respond.json(c, encoder.encode(JSON.stringify(data)), status, headers);
    if (error instanceof ApiError) {
      return json({ error: error.message }, error.status, error.headers);
    }
    if (error instanceof HTTPException && error.status < 500) {
      return json({ error: error.message || "bad request" }, error.status);
    }
    if (isClientGone(error)) return jsonResponse({ error: "request cut off" }, 400);
    console.error("internal error:", error);
    return json({ error: API_ERRORS.internal }, 500);
  };

  // Every /api/v1 request, known path or not, draws a token before any other
  // check: every handler is registered through `limited`, which draws first
  // (a call in the handler's own frame rather than a middleware frame).
  const drawToken = rateLimitGate(deps);
  const limited =
    <P extends string>(handler: Handler<AppEnv, P>): Handler<AppEnv, P> => (c, next) => {
      // A token drawn at once (a cached key, the memory limiter) costs no turn of the event loop.
      const drawn = drawToken(c);
      return drawn instanceof Promise ? drawn.then(() => handler(c, next)) : handler(c, next);
    };
  const endpoint = <P extends string>(handler: Handler<AppEnv, P>) =>
    observer.endpoint(limited(handler), mapError, true);
  const get = <P extends string>(path: P, handler: Handler<AppEnv, P>) =>
    api.get(path, endpoint(handler));

  get("/", (c) => respond.ok(c, index));

  // Public like the index, but not listed in it (the index lists the four key routes only).
  get("/openapi.json", (c) => respond.ok(c, openApi));

  get("/projects", (c) => {
    const key = acceptedKey(c, deps);
    return thenRead(
      listProjects(kv),
      (projects) =>
        respond.ok(c, projectListBody(key, projects, (project) => projectVisible(key, project))),
    );
  });

  // The hot path: with both records in the read cache, answered without a turn of the event loop.
  get("/projects/:slug/releases/latest", (c) => {
    const key = acceptedKey(c, deps);
    return thenRead(
      findVisibleProjectBySlug(kv, key, c.req.param("slug")),
      (project) =>
        thenRead(
          getLatestRelease(kv, project.id),
          (release) => respond.ok(c, latestReleaseBody(project, release)),
        ),
    );
  });

  get("/releases/:id", async (c) => {
    const key = acceptedKey(c, deps);
    const { project, release } = await findVisibleRelease(kv, key, c.req.param("id"));
    return respond.ok(c, releaseEnvelopeBody(project, release));
  });

  get("/releases/:id/download", async (c) => {
    const key = acceptedKey(c, deps);
    const { release } = await findVisibleRelease(kv, key, c.req.param("id"));
    c.set("releaseId", release.id);
    const served = await serveArtifact(release, c.req.raw, {
      store: deps.artifacts,
      delivery,
    });
    if (served.countsAsDownload) {
      c.set("onDownloaded", () =>
        countDownload(kv, {
          releaseId: release.id,
          projectId: release.project_id,
          keyId: key.id,
        }).catch((error) => {
          metrics.recordKvError("download_count");
          console.error("download count failed:", error);
        }));
    }
    setHeaders(served.response.headers, respond.headers);
    return served.response;
  });

  // The API is read-only: known paths refuse other methods; unknown paths are
  // 404 (`notFound`, through the app's not-found handler).
  for (
    const path of [
      "/",
      "/projects",
      "/projects/:slug/releases/latest",
      "/releases/:id",
      "/releases/:id/download",
    ]
  ) {
    api.on(
      ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
      path,
      endpoint(() => {
        throw new ApiError(405, API_ERRORS.methodNotAllowed, { allow: "GET, HEAD" });
      }),
    );
  }
  const notFound = observer.endpoint(
    limited(() => {
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }),
    mapError,
  );
  return {
    routes: api,
    notFound: (c) => notFound(c, async () => {}) as Cached<Response>,
  };
}

/** The latest-release answer of a visible project; else the spec's 404. */
function latestReleaseBody(project: Project, release: Release | null): Uint8Array<ArrayBuffer> {
  if (release === null || release.state !== "active") {
    throw new ApiError(404, API_ERRORS.releaseNotFound);
  }
  return releaseEnvelopeBody(project, release);
}

function findVisibleProjectBySlug(kv: Deno.Kv, key: ApiKey, slug: string): Cached<Project> {
  // A slug that cannot exist is not looked up (and cannot overflow a KV key).
  return thenRead(isSlug(slug) ? getProjectBySlug(kv, slug) : null, (project) => {
    if (!projectVisible(key, project)) throw new ApiError(404, API_ERRORS.resourceNotFound);
    return project;
  });
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
