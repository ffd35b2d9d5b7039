/**
 * Electron's built-in autoUpdater under /feeds/squirrel (docs/feeds.md
 * "Electron's autoUpdater (Squirrel)"): Squirrel.Mac's update JSON (204 when
 * the client is current), Squirrel.Windows' `RELEASES` and the files they
 * name. The app's URL names the app; the platform segment picks its project
 * (src/client_api/app_project.ts). Each route is there twice: with the bearer key,
 * and under /feeds/c/{credential}/ for clients that send no headers
 * (src/feeds/url_credential.ts). The release offered is the one every other
 * answer offers (`latestFor`: rollout, testers, halt, rollback).
 */
import type { Context, Handler, Hono } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import { getActiveReleaseByVersion } from "../releases/release_versions.ts";
import { getRelease } from "../releases/releases.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Release } from "../releases/types.ts";
import { FEEDS_PREFIX } from "../feeds/paths.ts";
import { squirrelPlatforms, squirrelSystem } from "../feeds/platforms.ts";
import {
  createSha1Keeper,
  isSquirrelVersion,
  releasesLine,
  squirrelDeltaChain,
  squirrelMacJson,
  squirrelOffers,
} from "../feeds/squirrel.ts";
import { getSquirrelDelta } from "../artifact_records/squirrel_deltas.ts";
import { sha256Hex } from "../lib/secrets.ts";
import { URL_CREDENTIAL_PREFIX } from "../lib/url_credential_path.ts";
import { findAppProject } from "./app_project.ts";
import { acceptedKey } from "./auth.ts";
import { getWithCredential, type KeySurface } from "./surface.ts";

const encoder = new TextEncoder();
const RELEASES = "RELEASES";
const TEXT_CONTENT_TYPE = "text/plain; charset=utf-8";
const EMPTY_SHA256 = sha256Hex("");
/** Most (project, version) lookups remembered; then the memory starts over. */
const MAX_VERSIONS_REMEMBERED = 10_000;

/** The Squirrel routes, relative to the feeds' prefix (each also under `/c/:credential`). */
export const SQUIRREL_ROUTES = [
  "/squirrel/:app/:platform/:version",
  "/squirrel/:app/:platform/:version/:file",
] as const;

export interface SquirrelContext {
  deps: ServiceDeps;
  surface: KeySurface;
  /** The service's origin, without a trailing slash. */
  origin: string;
}

export function addSquirrelRoutes(feeds: Hono<AppEnv>, { deps, surface, origin }: SquirrelContext) {
  const { store } = deps;
  const { respond } = surface;
  const sha1Of = createSha1Keeper(store, deps.artifacts);
  /** Release ids found by project and version; each read again through the read cache. */
  const byVersion = new Map<string, number>();

  /**
   * The project's active release of `version`: the one found before, read
   * through the read cache and checked to still be it; else the release index
   * (once per version).
   */
  const activeRelease = async (projectId: number, version: string): Promise<Release | null> => {
    const memo = `${projectId}\n${version}`;
    const id = byVersion.get(memo);
    if (id !== undefined) {
      const release = await getRelease(store, id);
      if (
        release !== null && release.project_id === projectId && release.version === version &&
        release.state === "active"
      ) return release;
      byVersion.delete(memo);
    }
    const found = await getActiveReleaseByVersion(store, projectId, version);
    if (found !== null) {
      if (byVersion.size >= MAX_VERSIONS_REMEMBERED) byVersion.clear();
      byVersion.set(memo, found.id);
    }
    return found;
  };

  /** The request's project, its OS and the client's version; else the spec's 404. */
  const target = (c: Context<AppEnv>, key: ApiKey) => {
    const { app, platform, version } = c.req.param() as Record<string, string>;
    const system = squirrelSystem(platform);
    if (system === null || !isSquirrelVersion(version)) {
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }
    const platforms = squirrelPlatforms(platform);
    return { project: findAppProject(store, key, { app, platforms }), system, version };
  };

  /**
   * The URL of `release`'s file (or of `filename` of that release's version) beside the
   * request's own (its credential kept, if any).
   */
  const fileUrl = (c: Context<AppEnv>, release: Release, filename = release.filename) => {
    const { app, platform } = c.req.param() as Record<string, string>;
    const credential = c.req.param("credential");
    const base = credential === undefined
      ? FEEDS_PREFIX
      : `${URL_CREDENTIAL_PREFIX}${encodeURIComponent(credential)}`;
    return `${origin}${base}/squirrel/${app}/${platform}/${encodeURIComponent(release.version)}/${
      encodeURIComponent(filename)
    }`;
  };

  /** The release offered to this client (recorded as seen) and whether it is an update. */
  const offer = (
    c: Context<AppEnv>,
    key: ApiKey,
    project: Project,
    version: string,
  ): MaybeAsync<{ release: Release; update: boolean }> => {
    return thenRead(
      surface.latestFor(key, project, surface.feedAskerOf(c)),
      (release) =>
        thenRead(surface.policyOf(project.id), (policy) => ({
          release,
          update: squirrelOffers(release, version, policy),
        })),
    );
  };

  // Squirrel.Mac: GET /feeds/squirrel/{app}/darwin[-arch]/{version}
  const macFeed: Handler<AppEnv> = (c) => {
    const key = acceptedKey(c, deps);
    const { project, system, version } = target(c, key);
    if (system !== "mac") throw new ApiError(404, API_ERRORS.resourceNotFound);
    return thenRead(
      project,
      (found) =>
        thenRead(offer(c, key, found, version), ({ release, update }) => {
          if (!update) {
            const headers = [...respond.headers, ...respond.signatureHeaders(c, 204, EMPTY_SHA256)];
            return new Response(null, { status: 204, headers });
          }
          const body = encoder.encode(squirrelMacJson(release, fileUrl(c, release)));
          return surface.withPolicy(respond.ok(c, body), release);
        }),
    );
  };

  // Squirrel.Windows: GET /feeds/squirrel/{app}/win32[-arch]/{version}/RELEASES, and the
  // files both name: GET|HEAD /feeds/squirrel/{app}/{platform}/{release version}/{filename},
  // the release's file or its delta package.
  const fileOrReleases: Handler<AppEnv> = async (c) => {
    const key = acceptedKey(c, deps);
    const { project: picked, system, version } = target(c, key);
    const project = await picked;
    const file = c.req.param("file") ?? "";
    if (file !== RELEASES) {
      const release = await activeRelease(project.id, version);
      if (release === null) throw new ApiError(404, API_ERRORS.resourceNotFound);
      if (release.filename === file) return await surface.download(c, key, release);
      const delta = await getSquirrelDelta(store, release.id);
      if (delta === null || delta.filename !== file) {
        throw new ApiError(404, API_ERRORS.resourceNotFound);
      }
      return await surface.downloadDelta(c, key, { release, file: delta });
    }
    if (system !== "win") throw new ApiError(404, API_ERRORS.resourceNotFound);
    // Squirrel.Windows adds ?localVersion= to the URL it was given; the path's version wins.
    const { release, update } = await offer(c, key, project, version);
    // No update: the client's own release, so Squirrel.Windows sees no other version (it would
    // install an older one it is listed); without that release here, the spec's 404.
    const listed = update ? release : await activeRelease(project.id, version);
    if (listed === null) throw new ApiError(404, API_ERRORS.releaseNotFound);
    const lines = [
      releasesLine({
        sha1: await sha1Of(listed),
        url: fileUrl(c, listed),
        size: listed.size_bytes,
      }),
    ];
    // The deltas from the client's version, when they make a complete chain.
    const chain = update
      ? await squirrelDeltaChain(store, { offered: listed, clientVersion: version })
      : [];
    for (const { release: step, delta } of chain) {
      lines.push(releasesLine({
        sha1: await sha1Of(delta),
        url: fileUrl(c, step, delta.filename),
        size: delta.size_bytes,
      }));
    }
    return await surface.withPolicy(
      respond.ok(c, encoder.encode(lines.join("\n")), TEXT_CONTENT_TYPE),
      listed,
    );
  };

  getWithCredential({ routes: feeds, surface }, SQUIRREL_ROUTES[0], macFeed);
  getWithCredential({ routes: feeds, surface }, SQUIRREL_ROUTES[1], fileOrReleases);
}
