/** The client JSON API under /api/v1 (../shared/spec/client-api.md "4. Endpoints"). */
import { projectVisible } from "../credentials/access.ts";
import type { ServiceDeps } from "../http/app_env.ts";
import type { Observer } from "../http/observe.ts";
import { thenRead } from "../kv/cache.ts";
import { listProjects } from "../projects/projects.ts";
import { acceptedKey } from "./auth.ts";
import { openApiJson } from "./openapi.ts";
import { apiIndex, createProjectListBodies, releaseEnvelopeBody } from "./serialize.ts";
import { createKeyRoutes, findVisibleRelease, type SurfaceRoutes } from "./surface.ts";

const encoder = new TextEncoder();

/**
 * The client API. Its handlers are observed by a wrapper (`observer.endpoint`)
 * rather than a middleware (src/http/observe.ts: one frame less a request),
 * which also maps their errors to the API's JSON answers (`mapError` of
 * src/client_api/surface.ts, shared with the updater feeds).
 */
export function createApiRoutes(deps: ServiceDeps, observer: Observer): SurfaceRoutes {
  const { store } = deps;
  const { surface, get, readOnly } = createKeyRoutes(deps, observer);
  const { respond } = surface;
  const projectListBody = createProjectListBodies();
  const index = encoder.encode(JSON.stringify(apiIndex(deps.config.serviceName)));
  const openApi = encoder.encode(openApiJson(deps.config.baseUrl));

  // Every /api/v1 request, known path or not, draws a token before any other
  // check (the surface's `endpoint` and `notFound`, src/client_api/surface.ts).
  get("/", (c) => respond.ok(c, index));

  // Public like the index, but not listed in it (the index lists the four key routes only).
  get("/openapi.json", (c) => respond.ok(c, openApi));

  get("/projects", (c) => {
    const key = acceptedKey(c, deps);
    return thenRead(
      listProjects(store),
      (projects) =>
        respond.ok(c, projectListBody(key, projects, (project) => projectVisible(key, project))),
    );
  });

  // The hot path: with both records in the read cache, answered without a turn of the event loop.
  // Outside a rollout the latest pointer's release at once; inside one, the
  // client's (src/releases/offer.ts).
  get("/projects/:slug/releases/latest", (c) => {
    const key = acceptedKey(c, deps);
    return thenRead(
      surface.visibleProject(c, key),
      (project) =>
        thenRead(
          surface.latestFor(key, project, surface.askerOf(c)),
          (release) =>
            surface.withPolicy(respond.ok(c, releaseEnvelopeBody(project, release)), release),
        ),
    );
  });

  get("/releases/:id", async (c) => {
    const key = acceptedKey(c, deps);
    const { project, release } = await findVisibleRelease(store, key, c.req.param("id"));
    return respond.ok(c, releaseEnvelopeBody(project, release));
  });

  get("/releases/:id/download", async (c) => {
    const key = acceptedKey(c, deps);
    const { release } = await findVisibleRelease(store, key, c.req.param("id"));
    // Adoption (docs/rollouts.md "Adoption"): which release each client was answered.
    await surface.seen(key, release, surface.askerOf(c));
    return await surface.download(c, key, release);
  });

  // The API is read-only: known paths refuse other methods; unknown paths are
  // 404 (`notFound`, through the app's not-found handler).
  return readOnly([
    "/",
    "/projects",
    "/projects/:slug/releases/latest",
    "/releases/:id",
    "/releases/:id/download",
  ]);
}
