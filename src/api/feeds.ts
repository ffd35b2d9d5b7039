/**
 * The updater feeds under /feeds (docs/feeds.md): electron-updater's generic
 * feed, the Tauri v2 updater's JSON and Sparkle's appcast, each answering a
 * project's latest release, and the artifact file they point at. Protected
 * exactly like the client API (src/api/surface.ts): the bearer key, its
 * permission and scope, the rate limit, the protected-response headers and
 * JSON errors; the file is the API's download (Range, If-Range, ETag, HEAD,
 * counting and the delivery modes).
 */
import { type Context, type Handler, Hono } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import type { Observer } from "../http/observe.ts";
import { INSTALL_ID_HEADER, STAGING_ID_HEADER } from "../rollouts/membership.ts";
import {
  type Cached,
  type Project,
  type Release,
  type ReleasePolicy,
  thenRead,
} from "../store/mod.ts";
import { electronFeedYaml, isElectronFeedFile } from "../feeds/electron.ts";
import { FEED_ERRORS, feedFilePath, SHA512_RETRY_AFTER_SECONDS } from "../feeds/paths.ts";
import { sparkleAppcast } from "../feeds/sparkle.ts";
import { isTauriSegment, tauriFeedJson } from "../feeds/tauri.ts";
import { acceptedKey } from "./auth.ts";
import { createKeySurface, findVisibleProjectBySlug, findVisibleRelease } from "./surface.ts";

const encoder = new TextEncoder();
const YAML_CONTENT_TYPE = "text/yaml; charset=utf-8";
const XML_CONTENT_TYPE = "application/xml; charset=utf-8";
const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

export interface FeedRoutes {
  /** The routes, to mount at /feeds. */
  routes: Hono<AppEnv>;
  /** The answer to a path under /feeds no route knows (like the client API's). */
  notFound: (c: Context<AppEnv>) => Cached<Response>;
}

export function createFeedRoutes(deps: ServiceDeps, observer: Observer): FeedRoutes {
  const { kv } = deps;
  const feeds = new Hono<AppEnv>();
  const surface = createKeySurface(deps, observer);
  const { respond } = surface;
  const origin = deps.config.baseUrl.replace(/\/+$/, "");
  // One body per release record version (the read cache hands out the same record while it
  // holds): its response and, with signing on, its signature are made once.
  const electronBodies = new WeakMap<Release, Uint8Array<ArrayBuffer>>();
  const tauriBodies = new WeakMap<Release, Uint8Array<ArrayBuffer>>();
  // The appcast also names the project and its release policy: kept with the records it was
  // made of.
  const sparkleBodies = new WeakMap<
    Release,
    { project: Project; policy: ReleasePolicy | null; body: Uint8Array<ArrayBuffer> }
  >();

  const get = <P extends string>(path: P, handler: Handler<AppEnv, P>) =>
    feeds.get(path, surface.endpoint(handler));

  /** The latest active release of the visible project `slug`, with its project. */
  const latestOf = <R>(
    c: Context<AppEnv>,
    answer: (project: Project, release: Release) => Cached<R>,
  ): Cached<R> => {
    const key = acceptedKey(c, deps);
    return thenRead(
      findVisibleProjectBySlug(kv, key, c.req.param("slug") ?? ""),
      (project) =>
        thenRead(
          // electron-updater sends its install id as x-user-staging-id.
          surface.latestFor(key, project, () =>
            c.req.raw.headers.get(INSTALL_ID_HEADER) ?? c.req.raw.headers.get(STAGING_ID_HEADER)),
          (release) =>
            answer(project, release),
        ),
    );
  };

  // electron-updater: GET /feeds/electron/{slug}/{channel}{-mac|-linux|…}.yml
  get("/electron/:slug/:file", (c) => {
    if (!isElectronFeedFile(c.req.param("file"))) {
      acceptedKey(c, deps);
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }
    return latestOf(c, (_project, release) => {
      let body = electronBodies.get(release);
      if (body === undefined) {
        if (release.checksum_sha512 === undefined) {
          throw new ApiError(503, FEED_ERRORS.sha512Pending, {
            "retry-after": String(SHA512_RETRY_AFTER_SECONDS),
          });
        }
        body = encoder.encode(electronFeedYaml(release, { fileUrl: feedFilePath(release) }));
        electronBodies.set(release, body);
      }
      return respond.ok(c, body, YAML_CONTENT_TYPE);
    });
  });

  // Tauri v2: GET /feeds/tauri/{slug}/{{target}}/{{arch}}/{{current_version}}
  get("/tauri/:slug/:target/:arch/:current_version", (c) => {
    const { target, arch, current_version } = c.req.param();
    if (![target, arch, current_version].every(isTauriSegment)) {
      acceptedKey(c, deps);
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }
    return latestOf(c, (_project, release) => {
      if (release.tauri_signature === undefined) {
        throw new ApiError(409, FEED_ERRORS.tauriSignatureMissing);
      }
      let body = tauriBodies.get(release);
      if (body === undefined) {
        body = encoder.encode(tauriFeedJson(release, `${origin}${feedFilePath(release)}`));
        tauriBodies.set(release, body);
      }
      return respond.ok(c, body, JSON_CONTENT_TYPE);
    });
  });

  // Sparkle: GET /feeds/sparkle/{slug}/appcast.xml
  get("/sparkle/:slug/appcast.xml", (c) =>
    latestOf(c, (project, release) => {
      if (release.sparkle_signature === undefined) {
        throw new ApiError(409, FEED_ERRORS.sparkleSignatureMissing);
      }
      return thenRead(surface.policyOf(project.id), (policy) => {
        let made = sparkleBodies.get(release);
        if (made?.project !== project || made.policy !== policy) {
          const url = `${origin}${feedFilePath(release)}`;
          const body = sparkleAppcast({
            project,
            release,
            url,
            critical: policy?.critical_ids.includes(release.id) ?? false,
            minimumVersion: policy?.minimum_version ?? null,
          });
          made = { project, policy, body: encoder.encode(body) };
          sparkleBodies.set(release, made);
        }
        return respond.ok(c, made.body, XML_CONTENT_TYPE);
      });
    }));

  // The artifact: GET|HEAD /feeds/files/{releaseId}/{filename}, the API's download.
  get("/files/:id/:filename", async (c) => {
    const key = acceptedKey(c, deps);
    const { release } = await findVisibleRelease(kv, key, c.req.param("id"));
    if (c.req.param("filename") !== release.filename) {
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }
    return await surface.download(c, key, release);
  });

  // Read-only, like the client API: known paths refuse other methods.
  for (
    const path of [
      "/electron/:slug/:file",
      "/tauri/:slug/:target/:arch/:current_version",
      "/sparkle/:slug/appcast.xml",
      "/files/:id/:filename",
    ]
  ) {
    feeds.on(
      ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
      path,
      surface.endpoint(() => {
        throw new ApiError(405, API_ERRORS.methodNotAllowed, { allow: "GET, HEAD" });
      }),
    );
  }
  return { routes: feeds, notFound: surface.notFound };
}
