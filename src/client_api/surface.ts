/**
 * What every surface answering API keys shares (the client API in routes.ts,
 * the updater feeds in feeds.ts, TUF in tuf.ts, install reports in
 * reports.ts): its routes and their start (`createKeyRoutes`), the JSON error
 * mapping with the protected headers, the rate-limit gate drawn first in the
 * handler's own frame, the observed endpoints, the key's visible projects and
 * releases, and the artifact download with its counting.
 */
import { type Context, type Handler, Hono } from "hono";
import { projectVisible } from "../credentials/access.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import { recordDelivery } from "../stats/delivery.ts";
import { getLatestView, type LatestView } from "../releases/latest_view.ts";
import { getProject, getProjectBySlug } from "../projects/projects.ts";
import { policyHeaders, type ReleasePolicy } from "../releases/release_policy.ts";
import { getRelease } from "../releases/releases.ts";
import { countDownload } from "../stats/downloads.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Release } from "../releases/types.ts";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError, mapDomainError } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import type { ErrorMapper, Observer } from "../http/observe.ts";
import { clientAddress, rateLimitAddress } from "../http/client_address.ts";
import { isSlug, parseIdParam } from "../lib/limits.ts";
import { type ApiResponder, createApiResponder, setHeaders } from "../http/response_headers.ts";
import {
  clientIdentity,
  INSTALL_ID_HEADER,
  releaseFor,
  STAGING_ID_HEADER,
} from "../releases/offer.ts";
import { acceptedKey, rateLimitGate } from "./auth.ts";
import { type Delivery, serveArtifact } from "./download.ts";
import type { Store } from "../kv/store.ts";

const encoder = new TextEncoder();

/** The client asking, as the adoption record needs it: its install id and its address. */
export interface Asker {
  /** The install id the route reads (null: none sent). */
  installId: () => string | null;
  /** The client address as the rate limit counts it (an IPv6 one as its /64: src/http/client_address.ts). */
  address: () => string;
}

/** A key-protected surface: its routes and its answer to a path no route knows. */
export interface SurfaceRoutes {
  /** The routes, to mount at the surface's prefix. */
  routes: Hono<AppEnv>;
  /**
   * The answer to a path under the prefix no route knows (a token drawn, then
   * the spec's 404), observed and mapped, for the app's not-found handler: a
   * catch-all route would match every request of the surface too, and two
   * handlers make Hono compose them.
   */
  notFound: (c: Context<AppEnv>) => MaybeAsync<Response>;
}

/** An answer's bytes, as `KeySurface.delivered` takes them. */
export interface Delivered {
  key: ApiKey;
  release: Release;
  served: number;
  full: number;
  attempt?: "differential" | "whole";
}

/** A server-made delta or patch, as a download of it needs it. */
export interface DeltaFile {
  storage_key: string;
  checksum_sha256: string;
  size_bytes: number;
  filename: string;
}

/**
 * Registers `handler` for GET at `path` of `routes` and at `/c/:credential${path}`
 * (for clients that send no headers: the key in the URL), each route its own
 * endpoint of `surface`, observed under its own route label.
 */
export function getWithCredential(
  { routes, surface }: { routes: Hono<AppEnv>; surface: KeySurface },
  path: string,
  handler: Handler<AppEnv>,
): void {
  routes.get(path, surface.endpoint(handler));
  routes.get(`/c/:credential${path}`, surface.endpoint(handler));
}

/** The shared parts of a key-protected surface. */
export interface KeySurface {
  respond: ApiResponder;
  mapError: ErrorMapper;
  /** `handler` behind the rate-limit gate, observed, its errors mapped (one route). */
  endpoint<P extends string>(handler: Handler<AppEnv, P>): Handler<AppEnv, P>;
  /**
   * Makes the known `paths` of the read-only `routes` refuse other methods
   * with the spec's 405 (unknown paths are the surface's 404, `notFound`).
   */
  refuseWrites(routes: Hono<AppEnv>, paths: readonly string[]): void;
  /** The answer to a path of the surface no route knows: a token drawn, then the spec's 404. */
  notFound: (c: Context<AppEnv>) => MaybeAsync<Response>;
  /**
   * The project the path's `slug` names, when `key` (by default the request's)
   * may see it; else the spec's 404, the lookup's only answer (the spec's 503,
   * 401 or 403 come from the key check, which must have run first: here for
   * the default key, by the caller for a `key` passed in).
   */
  visibleProject(c: Context<AppEnv>, key?: ApiKey): MaybeAsync<Project>;
  /** The download of `release`'s artifact by `key`, counted like the API's. */
  download(c: Context<AppEnv>, key: ApiKey, release: Release): Promise<Response>;
  /**
   * The download of a server-made delta or patch `file` to `release`: served
   * like the artifact, its bytes counted against the release's whole size as
   * a differential update (src/stats/delivery.ts), once like the block map.
   */
  downloadDelta(
    c: Context<AppEnv>,
    key: ApiKey,
    delta: { release: Release; file: DeltaFile },
  ): Promise<Response>;
  /**
   * The latest active release of `project` for a client of `key` (a staged
   * rollout decides per client, src/releases/offer.ts, by the install id
   * `asker` reads), recorded for adoption as offered (docs/rollouts.md
   * "Adoption"); else the spec's 404 "release not found".
   */
  latestFor(key: ApiKey, project: Project, asker: Asker): MaybeAsync<Release>;
  /**
   * That a client of `key` downloads `release` (adoption), recorded as
   * offered when it is the release the client's rollout place gives it.
   */
  seen(key: ApiKey, release: Release, asker: Asker): MaybeAsync<void>;
  /** The asker of request `c`: its `X-Install-Id` and its address. */
  askerOf(c: Context<AppEnv>): Asker;
  /**
   * The asker of feed request `c`: its `X-Install-Id`, else electron-updater's
   * `x-user-staging-id`, and its address.
   */
  feedAskerOf(c: Context<AppEnv>): Asker;
  /** The project's release policy (critical releases, minimum version, rollback), or null. */
  policyOf(projectId: number): MaybeAsync<ReleasePolicy | null>;
  /**
   * `response` (the latest-release answer of `release`) with the policy's
   * headers (docs/rollouts.md "Critical updates and a minimum version");
   * a project without a policy costs a look into the read cache's entry the
   * answer was just made from, and a null check.
   */
  withPolicy(response: Response, release: Release): MaybeAsync<Response>;
  /**
   * Bytes answered to a client of `key` for `release` (its file, parts or block map) and what
   * they stand for in whole downloads, `attempt` saying whether they start a differential update
   * or are the whole file: the metrics and the release's sums (src/stats/delivery.ts).
   */
  delivered(c: Context<AppEnv>, delivery: Delivered): void;
}

function createKeySurface(deps: ServiceDeps, observer: Observer): KeySurface {
  const { store, config, metrics } = deps;
  const respond = createApiResponder(deps.responseHeaders, deps.signer);
  const { signer } = deps;
  const delivery: Delivery = {
    mode: config.downloadMode,
    urlTtlSeconds: config.downloadUrlTtlSeconds,
    xAccelPrefix: config.xAccelPrefix,
    xAccelSecret: config.xAccelSecret,
  };

  /** Every error as the contract's `{ "error": … }` with the protected headers. */
  const mapError: ErrorMapper = (error, c) => {
    const json = (data: unknown, status: number, headers?: Record<string, string>) =>
      respond.json(c, encoder.encode(JSON.stringify(data)), status, headers);
    const mapped = mapDomainError(error);
    // A client that went away gets no protected headers: nobody reads them.
    if (mapped?.kind === "client_gone") return jsonResponse({ error: mapped.message }, 400);
    if (mapped !== null) return json({ error: mapped.message }, mapped.status, mapped.headers);
    console.error("internal error:", error);
    return json({ error: API_ERRORS.internal }, 500);
  };

  // Every request, known path or not, draws a token before any other check:
  // every handler is registered through `limited`, which draws first (a call
  // in the handler's own frame rather than a middleware frame).
  // With signing on, the first requests wait for the signing keys to be read.
  const drawToken = rateLimitGate(deps);
  const limited =
    <P extends string>(handler: Handler<AppEnv, P>): Handler<AppEnv, P> => (c, next) => {
      if (signer.enabled && !signer.loaded) {
        return signer.ready().then(() => limited(handler)(c, next));
      }
      // A token drawn at once (a cached key, the memory limiter) costs no turn of the event loop.
      return thenRead(drawToken(c), () => handler(c, next));
    };
  const endpoint = <P extends string>(handler: Handler<AppEnv, P>) =>
    observer.endpoint(limited(handler), mapError, true);
  const notFound = observer.endpoint(
    limited(() => {
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }),
    mapError,
  );

  const record = (key: ApiKey, release: Release, asker: Asker, offered: boolean) =>
    deps.adoption.record({
      projectId: release.project_id,
      releaseId: release.id,
      identity: clientIdentity(asker.installId(), key),
      address: asker.address(),
      offered,
    });
  /** The release `view` offers the client at `nowMs` (the latest pointer's outside a rollout). */
  const offerOf = (view: LatestView, key: ApiKey, asker: Asker, nowMs: number) =>
    view.rollout === null
      ? view.release
      : releaseFor(view, { key, installId: asker.installId, nowMs });
  /** The release `view` offers the client, recorded as seen; else the spec's 404. */
  const offered = (view: LatestView, key: ApiKey, asker: Asker): Release => {
    const release = offerOf(view, key, asker, Date.now());
    if (release === null || release.state !== "active") {
      throw new ApiError(404, API_ERRORS.releaseNotFound);
    }
    record(key, release, asker, true);
    return release;
  };
  const seen = (key: ApiKey, release: Release, asker: Asker): MaybeAsync<void> =>
    thenRead(getLatestView(store, release.project_id), (view) => {
      record(key, release, asker, offerOf(view, key, asker, Date.now())?.id === release.id);
    });

  const policyOf = (projectId: number): MaybeAsync<ReleasePolicy | null> => {
    const view = getLatestView(store, projectId);
    return view instanceof Promise ? view.then((found) => found.policy) : view.policy;
  };
  const addPolicy = (response: Response, policy: ReleasePolicy | null, release: Release) => {
    if (policy !== null) setHeaders(response.headers, policyHeaders(policy, release));
    return response;
  };

  const askerOf = (c: Context<AppEnv>): Asker => ({
    installId: () => c.req.raw.headers.get(INSTALL_ID_HEADER),
    address: () => rateLimitAddress(clientAddress(c, config.trustProxy)),
  });
  /** A feed client's install id: `X-Install-Id`, else electron-updater's `x-user-staging-id`. */
  const feedInstallId = (c: Context<AppEnv>) =>
    c.req.raw.headers.get(INSTALL_ID_HEADER) ?? c.req.raw.headers.get(STAGING_ID_HEADER);
  const feedAskerOf = (c: Context<AppEnv>): Asker => ({
    installId: () => feedInstallId(c),
    address: askerOf(c).address,
  });

  const delivered = (c: Context<AppEnv>, { key, release, served, full, attempt }: Delivered) => {
    const identity = clientIdentity(feedInstallId(c), key);
    const client = identity.startsWith("key:")
      ? `${identity}@${clientAddress(c, config.trustProxy)}`
      : identity;
    recordDelivery(store, {
      projectId: release.project_id,
      releaseId: release.id,
      servedBytes: served,
      fullBytes: full,
      attempt: attempt === undefined ? undefined : { kind: attempt, client },
    }).then((counted) => metrics.recordDelivery(served, counted), (error) => {
      metrics.recordDelivery(served, full);
      metrics.recordKvError("download_count");
      console.error("delivery count failed:", error);
    });
  };

  /** `release`'s artifact, or the delta `file` to it. */
  const serve = async (
    c: Context<AppEnv>,
    key: ApiKey,
    { release, file }: { release: Release; file: DeltaFile | null },
  ): Promise<Response> => {
    c.set("releaseId", release.id);
    const artifact = file === null
      ? release
      : { ...release, ...file, content_type: "application/octet-stream" };
    const served = await serveArtifact(artifact, c.req.raw, {
      artifacts: deps.artifacts,
      delivery,
    });
    if (c.req.method === "GET") {
      delivered(c, {
        key,
        release,
        served: served.bytes,
        full: served.countsAsDownload ? release.size_bytes : 0,
        attempt: !served.countsAsDownload ? undefined : file === null ? "whole" : "differential",
      });
    }
    if (served.countsAsDownload) {
      c.set("onDownloaded", () =>
        countDownload(store, {
          releaseId: release.id,
          projectId: release.project_id,
          keyId: key.id,
        }).catch((error) => {
          metrics.recordKvError("download_count");
          console.error("download count failed:", error);
        }));
    }
    setHeaders(served.response.headers, respond.headers);
    // Signed over the artifact's SHA-256, which the client checks after the download anyway.
    setHeaders(
      served.response.headers,
      respond.signatureHeaders(c, served.response.status, artifact.checksum_sha256),
    );
    return served.response;
  };

  return {
    respond,
    mapError,
    seen,
    askerOf,
    feedAskerOf,
    policyOf,
    withPolicy(response, release) {
      const policy = policyOf(release.project_id);
      return policy instanceof Promise
        ? policy.then((found) => addPolicy(response, found, release))
        : addPolicy(response, policy, release);
    },
    delivered,
    latestFor(key, project, asker) {
      return thenRead(getLatestView(store, project.id), (view) => offered(view, key, asker));
    },
    endpoint,
    refuseWrites(routes, paths) {
      // One endpoint a path: each is observed with its own route label.
      for (const path of paths) {
        routes.on(
          ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
          path,
          endpoint(() => {
            throw new ApiError(405, API_ERRORS.methodNotAllowed, { allow: "GET, HEAD" });
          }),
        );
      }
    },
    notFound: (c) => notFound(c, async () => {}) as MaybeAsync<Response>,
    visibleProject: (c, key = acceptedKey(c, deps)) =>
      findVisibleProjectBySlug(store, key, c.req.param("slug") ?? ""),
    download: (c, key, release) => serve(c, key, { release, file: null }),
    downloadDelta: (c, key, { release, file }) => serve(c, key, { release, file }),
  };
}

/** A key-protected surface in the making: its routes and the shared parts they use. */
export interface KeyRoutes {
  /** The routes, to mount at the surface's prefix. */
  routes: Hono<AppEnv>;
  surface: KeySurface;
  /** Adds the GET (and HEAD) route `path`: `handler` as one endpoint (`KeySurface.endpoint`). */
  get<P extends string>(path: P, handler: Handler<AppEnv, P>): void;
  /**
   * The surface, done: its known `paths` refuse other methods (`KeySurface.refuseWrites`),
   * the paths no route knows are its 404.
   */
  readOnly(paths: readonly string[]): SurfaceRoutes;
}

/** The start of every key-protected surface: its routes and its shared parts. */
export function createKeyRoutes(deps: ServiceDeps, observer: Observer): KeyRoutes {
  const routes = new Hono<AppEnv>();
  const surface = createKeySurface(deps, observer);
  return {
    routes,
    surface,
    get(path, handler) {
      routes.get(path, surface.endpoint(handler));
    },
    readOnly(paths) {
      surface.refuseWrites(routes, paths);
      return { routes, notFound: surface.notFound };
    },
  };
}

/** The project `slug` names when `key` may see it; else the spec's 404. */
function findVisibleProjectBySlug(
  store: Store,
  key: ApiKey,
  slug: string,
): MaybeAsync<Project> {
  // A slug that cannot exist is not looked up (and cannot overflow a KV key).
  return thenRead(isSlug(slug) ? getProjectBySlug(store, slug) : null, (project) => {
    if (!projectVisible(key, project)) throw new ApiError(404, API_ERRORS.resourceNotFound);
    return project;
  });
}

/** The active release `rawId` names, of a project `key` may see; else the spec's 400 or 404. */
export async function findVisibleRelease(
  store: Store,
  key: ApiKey,
  rawId: string,
): Promise<{ project: Project; release: Release }> {
  // Anything but digits is the spec's 400; a number too long to be an id is not found.
  const id = parseIdParam(rawId);
  if (id === "invalid") throw new ApiError(400, API_ERRORS.invalidReleaseId);
  const release = id === null ? null : await getRelease(store, id);
  if (release === null || release.state !== "active") {
    throw new ApiError(404, API_ERRORS.resourceNotFound);
  }
  const project = await getProject(store, release.project_id);
  if (!projectVisible(key, project)) throw new ApiError(404, API_ERRORS.resourceNotFound);
  return { project, release };
}
