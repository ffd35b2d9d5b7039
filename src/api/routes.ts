/** The client JSON API under /api/v1 (client-api.md section 4). */
import { type Handler, Hono } from "hono";
import { projectVisible } from "../store/access.ts";
import type { AppDeps, AppEnv } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { ID_PATTERN, isSlug } from "../lib/limits.ts";
import { type ApiResponder, setHeaders } from "../http/response_headers.ts";
import { recordKvError } from "../lib/metrics.ts";
import {
  type ApiKey,
  cachedLatestRelease,
  cachedProjectBySlug,
  cachedProjectList,
  countDownload,
  getLatestRelease,
  getProject,
  getProjectBySlug,
  getRelease,
  listProjects,
  type Project,
  type Release,
} from "../store/mod.ts";
import { acceptedKey, rateLimitGate } from "./auth.ts";
import { type Delivery, serveArtifact } from "./download.ts";
import { openApiJson } from "./openapi.ts";
import { apiIndex, projectListBody, releaseEnvelopeBody } from "./serialize.ts";

const encoder = new TextEncoder();

/** Wraps each route's handler: the request observation (metrics, access log) and error mapping. */
export type EndpointWrapper = <P extends string>(handler: Handler<AppEnv, P>) => Handler<AppEnv, P>;

export interface ClientApi {
  /** The routes, to mount at /api/v1. */
  routes: Hono<AppEnv>;
  /**
   * The answer to a path under /api/v1 no route knows (a token drawn, then the
   * spec's 404), for the app's not-found handler: a catch-all route would
   * match every API request too, and two handlers make Hono compose them.
   */
  notFound: Handler<AppEnv>;
}

/**
 * The client API. `respond` builds its responses with every header (one per
 * app, shared with its error mapping); `endpoint` wraps every handler, in
 * place of a middleware (src/http/observe.ts: one frame less a request).
 */
export function createApiRoutes(
  deps: AppDeps,
  respond: ApiResponder,
  endpoint: EndpointWrapper,
): ClientApi {
  const { kv, config } = deps;
  const api = new Hono<AppEnv>();
  const delivery: Delivery = {
    mode: config.downloadMode,
    urlTtlSeconds: config.downloadUrlTtlSeconds,
    xAccelPrefix: config.xAccelPrefix,
    xAccelSecret: config.xAccelSecret,
  };
  const index = encoder.encode(JSON.stringify(apiIndex(deps.config.serviceName)));
  const openApi = encoder.encode(openApiJson(deps.config.baseUrl));

  // Every /api/v1 request, known path or not, draws a token before any other
  // check: every handler is registered through `limited`, which draws first
  // (a call in the handler's own frame rather than a middleware frame).
  const drawToken = rateLimitGate(deps);
  const limited =
    <P extends string>(handler: Handler<AppEnv, P>): Handler<AppEnv, P> => (c, next) => {
      // A token drawn at once (a cached key, the memory limiter) costs no turn of the event loop.
      const drawn = drawToken(c);
      return drawn === undefined ? handler(c, next) : drawn.then(() => handler(c, next));
    };
  const get = <P extends string>(path: P, handler: Handler<AppEnv, P>) =>
    api.get(path, endpoint(limited(handler)));

  get("/", (c) => respond.ok(c, index));

  // Public like the index, but not listed in it (the index lists the four key routes only).
  get("/openapi.json", (c) => respond.ok(c, openApi));

  get("/projects", (c) => {
    const key = acceptedKey(c, deps);
    const answer = (projects: readonly Project[]) =>
      respond.ok(c, projectListBody(key, projects, (project) => projectVisible(key, project)));
    // From the read cache without a turn of the event loop when it holds the list.
    const cached = cachedProjectList(kv);
    return cached === undefined ? listProjects(kv).then(answer) : answer(cached);
  });

  get("/projects/:slug/releases/latest", (c) => {
    const key = acceptedKey(c, deps);
    const slug = c.req.param("slug");
    // The hot path: both records in the read cache, answered without a turn of the event loop.
    const project = isSlug(slug) ? cachedProjectBySlug(kv, slug) : undefined;
    const release = project === undefined ? undefined : cachedLatestRelease(kv, project.id);
    if (release !== undefined) return respond.ok(c, latestReleaseBody(key, project!, release));
    return (async () => {
      const project = await findVisibleProjectBySlug(kv, key, slug);
      const release = await getLatestRelease(kv, project.id);
      return respond.ok(c, latestReleaseBody(key, project, release));
    })();
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
    const served = await serveArtifact(deps.artifacts, release, c.req.raw, delivery);
    if (served.countsAsDownload) {
      c.set("onDownloaded", () =>
        countDownload(kv, {
          releaseId: release.id,
          projectId: release.project_id,
          keyId: key.id,
        }).catch((error) => {
          recordKvError("download_count");
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
      endpoint(limited(() => {
        throw new ApiError(405, API_ERRORS.methodNotAllowed, { allow: "GET, HEAD" });
      })),
    );
  }
  const notFound = limited(() => {
    throw new ApiError(404, API_ERRORS.resourceNotFound);
  });
  return { routes: api, notFound };
}

/** The latest-release answer of a project the key may see; else the spec's 404s. */
function latestReleaseBody(
  key: ApiKey,
  project: Project | null,
  release: Release | null,
): Uint8Array<ArrayBuffer> {
  if (!projectVisible(key, project)) throw new ApiError(404, API_ERRORS.resourceNotFound);
  if (release === null || release.state !== "active") {
    throw new ApiError(404, API_ERRORS.releaseNotFound);
  }
  return releaseEnvelopeBody(project, release);
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
