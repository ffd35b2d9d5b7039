/**
 * The updater feeds under /feeds (docs/feeds.md): electron-updater's generic
 * feed, the Tauri v2 updater's JSON and Sparkle's appcast, each answering a
 * project's latest release, and the artifact file they point at. Protected
 * exactly like the client API (src/client_api/surface.ts): the bearer key, its
 * permission and scope, the rate limit, the protected-response headers and
 * JSON errors; the file (and a server-made patch to it) is the API's download (Range, If-Range, ETag, HEAD,
 * counting and the delivery modes).
 */
import type { Context } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import type { Observer } from "../http/observe.ts";
import { getBlockMapBytes } from "../artifact_records/block_maps.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import type { ReleasePolicy } from "../releases/release_policy.ts";
import { getActiveReleaseByVersion } from "../releases/release_versions.ts";
import { getLatestRelease } from "../releases/releases.ts";
import { listSparkleDeltasByRelease } from "../artifact_records/sparkle_deltas.ts";
import { listArtifactPatches } from "../artifact_records/artifact_patches.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Release } from "../releases/types.ts";
import { electronFeedYaml, isElectronFeedFile } from "../feeds/electron.ts";
import {
  BLOCK_MAP_SUFFIX,
  electronFilePath,
  FEED_ERRORS,
  feedFilePath,
  PATCH_BASE_SHA256_HEADER,
  PATCH_SHA256_HEADER,
  SHA512_RETRY_AFTER_SECONDS,
  sparkleDeltaPath,
} from "../feeds/paths.ts";
import { sparkleAppcast } from "../feeds/sparkle.ts";
import { type AppcastKey, createAppcastKeys, signAppcast } from "../feeds/sparkle_signing.ts";
import { isTauriSegment, tauriFeedJson } from "../feeds/tauri.ts";
import { electronPlatforms, tauriPlatforms } from "../feeds/platforms.ts";
import { feedCredential } from "../feeds/url_credential.ts";
import { feedMacHash } from "../lib/feed_mac.ts";
import { keepApiKeyFeedMac } from "../credentials/api_keys.ts";
import { URL_CREDENTIAL_PREFIX } from "../lib/url_credential_path.ts";
import { findAppProject } from "./app_project.ts";
import { addSquirrelRoutes, SQUIRREL_ROUTES } from "./squirrel_feed.ts";
import { acceptedKey } from "./auth.ts";
import { addVelopackRoutes, VELOPACK_ROUTES } from "./velopack_feed.ts";
import { createKeyRoutes, findVisibleRelease, type SurfaceRoutes } from "./surface.ts";

const encoder = new TextEncoder();
const YAML_CONTENT_TYPE = "text/yaml; charset=utf-8";
const XML_CONTENT_TYPE = "application/xml; charset=utf-8";
/** What app-builder's block maps are served as (gzip bytes, not a gzip encoding of the answer). */
const BLOCK_MAP_CONTENT_TYPE = "application/octet-stream";
/** Sparkle is macOS's: `{slug}-mac` when `{slug}` is no project (docs/feeds.md "One URL per app"). */
const SPARKLE_PLATFORMS = ["mac"];

export function createFeedRoutes(deps: ServiceDeps, observer: Observer): SurfaceRoutes {
  const { store } = deps;
  const { routes: feeds, surface, get, readOnly } = createKeyRoutes(deps, observer);
  const { respond } = surface;
  const origin = deps.config.baseUrl.replace(/\/+$/, "");
  // One body per release record version (the read cache hands out the same record while it
  // holds): its response and, with signing on, its signature are made once.
  const electronBodies = new WeakMap<Release, Uint8Array<ArrayBuffer>>();
  const tauriBodies = new WeakMap<Release, Uint8Array<ArrayBuffer>>();
  // The appcast also names the project and its release policy: kept with the project record,
  // policy, key and deltas it was made with.
  const sparkleBodies = new WeakMap<
    Release,
    {
      project: Project;
      policy: ReleasePolicy | null;
      signing: AppcastKey | null;
      deltas: number;
      body: Uint8Array<ArrayBuffer>;
    }
  >();
  // The vendors' Sparkle keys: a project with one gets a signed appcast (docs/feeds.md).
  const appcastKeys = createAppcastKeys(store, deps.config.dataDir);

  /**
   * The latest active release of the project the URL's `slug` picks for `platforms` (the
   * client's, most specific first; src/client_api/app_project.ts), with its project.
   */
  const latestOf = <R>(
    c: Context<AppEnv>,
    platforms: readonly string[],
    answer: (project: Project, release: Release) => MaybeAsync<R>,
  ): MaybeAsync<R> => {
    const key = acceptedKey(c, deps);
    return thenRead(
      findAppProject(store, key, { app: c.req.param("slug") ?? "", platforms }),
      (project) =>
        thenRead(
          // electron-updater sends its install id as x-user-staging-id.
          surface.latestFor(key, project, surface.feedAskerOf(c)),
          (release) => answer(project, release),
        ),
    );
  };

  // electron-updater: GET /feeds/electron/{slug}/{channel}{-mac|-linux|…}.yml
  get("/electron/:slug/:file", (c) => {
    if (!isElectronFeedFile(c.req.param("file"))) {
      acceptedKey(c, deps);
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }
    return latestOf(c, electronPlatforms(c.req.param("file")), (project, release) => {
      let body = electronBodies.get(release);
      if (body === undefined) {
        if (release.checksum_sha512 === undefined) {
          throw new ApiError(503, FEED_ERRORS.sha512Pending, {
            "retry-after": String(SHA512_RETRY_AFTER_SECONDS),
          });
        }
        body = encoder.encode(
          electronFeedYaml(release, { fileUrl: electronFilePath(project.slug, release) }),
        );
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
    return latestOf(c, tauriPlatforms(target, arch), (_project, release) => {
      if (release.tauri_signature === undefined) {
        throw new ApiError(409, FEED_ERRORS.tauriSignatureMissing);
      }
      let body = tauriBodies.get(release);
      if (body === undefined) {
        body = encoder.encode(tauriFeedJson(release, `${origin}${feedFilePath(release)}`));
        tauriBodies.set(release, body);
      }
      return respond.ok(c, body);
    });
  });

  // Sparkle: GET /feeds/sparkle/{slug}/appcast.xml
  get("/sparkle/:slug/appcast.xml", (c) =>
    latestOf(c, SPARKLE_PLATFORMS, (project, release) => {
      if (release.sparkle_signature === undefined) {
        throw new ApiError(409, FEED_ERRORS.sparkleSignatureMissing);
      }
      return thenRead(surface.policyOf(project.id), (policy) =>
        thenRead(appcastKeys.of(project), (signing) =>
          thenRead(listSparkleDeltasByRelease(store, release.id), (deltas) => {
            let made = sparkleBodies.get(release);
            if (
              made?.project !== project || made.policy !== policy ||
              made.signing?.setAt !== signing?.setAt || made.deltas !== deltas.length
            ) {
              const url = `${origin}${feedFilePath(release)}`;
              const listed = deltas.map((delta) => ({
                url: `${origin}${sparkleDeltaPath(project.slug, delta)}`,
                from: delta.from,
                length: delta.size_bytes,
                signature: delta.sparkle_signature,
              }));
              const content = encoder.encode(sparkleAppcast({
                project,
                release,
                url,
                critical: policy?.critical_ids.includes(release.id) ?? false,
                minimumVersion: policy?.minimum_version ?? null,
                bundleIdentifier: signing?.bundleIdentifier,
                deltas: listed,
              }));
              made = {
                project,
                policy,
                signing,
                deltas: deltas.length,
                body: signing ? signAppcast(content, signing.key) : content,
              };
              sparkleBodies.set(release, made);
            }
            return respond.ok(c, made.body, XML_CONTENT_TYPE);
          })));
    }));

  // A Sparkle delta: GET|HEAD /feeds/sparkle/{slug}/deltas/{releaseId}/{index}/{filename},
  // downloaded like the release's file.
  get("/sparkle/:slug/deltas/:id/:index/:filename", async (c) => {
    const key = acceptedKey(c, deps);
    const { project, release } = await findVisibleRelease(store, key, c.req.param("id"));
    const deltas = await listSparkleDeltasByRelease(store, release.id);
    const delta = deltas.find((d) => String(d.index) === c.req.param("index"));
    if (
      delta === undefined || project.slug !== c.req.param("slug") ||
      delta.filename !== c.req.param("filename")
    ) throw new ApiError(404, API_ERRORS.resourceNotFound);
    return await surface.download(c, key, {
      ...release,
      storage_key: delta.storage_key,
      checksum_sha256: delta.checksum_sha256,
      size_bytes: delta.size_bytes,
      filename: delta.filename,
      content_type: "application/octet-stream",
    });
  });

  /**
   * The block map of `release`, or the feeds' 404 while it has none. The latest release's
   * starts a differential update (electron-updater then fetches the installed release's, an
   * older one): one whole download's worth of bytes it stands for.
   */
  const blockMap = async (c: Context<AppEnv>, key: ApiKey, release: Release) => {
    c.set("releaseId", release.id);
    const body = await getBlockMapBytes(store, release.id);
    if (body === null) throw new ApiError(404, FEED_ERRORS.blockMapPending);
    if (c.req.method === "GET") {
      const latest = await getLatestRelease(store, release.project_id);
      const starts = latest?.id === release.id;
      surface.delivered(c, {
        key,
        release,
        served: body.byteLength,
        full: starts ? release.size_bytes : 0,
        attempt: starts ? "differential" : undefined,
      });
    }
    return respond.ok(c, body, BLOCK_MAP_CONTENT_TYPE);
  };

  // The artifact: GET|HEAD /feeds/files/{releaseId}/{filename}, the API's download;
  // {filename}.blockmap beside it: its block map.
  get("/files/:id/:filename", async (c) => {
    const key = acceptedKey(c, deps);
    const { release } = await findVisibleRelease(store, key, c.req.param("id"));
    const name = c.req.param("filename");
    if (name === release.filename + BLOCK_MAP_SUFFIX) return await blockMap(c, key, release);
    if (name !== release.filename) throw new ApiError(404, API_ERRORS.resourceNotFound);
    return await surface.download(c, key, release);
  });

  // The electron feed's file URL: GET|HEAD /feeds/electron/{slug}/files/{version}/{filename},
  // the newest active release with that version; any {name}.blockmap in that folder is its
  // block map (electron-updater rewrites the new file's URL into the installed one's).
  // (A parameter, not the word "files", in the route: Hono's fast RegExpRouter needs the
  // segment to be a parameter in both electron routes.)
  get("/electron/:slug/:files/:version/:filename", async (c) => {
    const key = acceptedKey(c, deps);
    if (c.req.param("files") !== "files") throw new ApiError(404, API_ERRORS.resourceNotFound);
    const project = await surface.visibleProject(c, key);
    const release = await getActiveReleaseByVersion(store, project.id, c.req.param("version"));
    if (release === null) throw new ApiError(404, API_ERRORS.resourceNotFound);
    const name = c.req.param("filename");
    if (name === release.filename) return await surface.download(c, key, release);
    if (name.endsWith(BLOCK_MAP_SUFFIX)) return await blockMap(c, key, release);
    throw new ApiError(404, API_ERRORS.resourceNotFound);
  });

  // A server-made patch (docs/client-api.md "Server-made patches"): GET|HEAD
  // /feeds/patches/{releaseId}/{installedVersion}, the zstd patch from that version's
  // artifact to the release's, or the feeds' 404 while there is none. Its own SHA-256 and
  // the SHA-256 of the file it applies to are headers; the result's is the release's.
  get("/patches/:id/:from", async (c) => {
    const key = acceptedKey(c, deps);
    const { release } = await findVisibleRelease(store, key, c.req.param("id"));
    const from = c.req.param("from");
    // A version uploaded more than once: the patch from its newest release.
    const patch = (await listArtifactPatches(store, release.id))
      .filter((p) => p.from_version === from)
      .sort((a, b) => b.from_release_id - a.from_release_id)[0];
    if (patch === undefined) throw new ApiError(404, FEED_ERRORS.patchPending);
    const response = await surface.downloadDelta(c, key, {
      release,
      file: { ...patch, filename: `${release.filename}.from-${from}.zst` },
    });
    response.headers.set(PATCH_SHA256_HEADER, patch.checksum_sha256);
    response.headers.set(PATCH_BASE_SHA256_HEADER, patch.from_sha256);
    return response;
  });

  addSquirrelRoutes(feeds, { deps, surface, origin });
  addVelopackRoutes(feeds, { deps, surface });

  // The credential of the request's key for feed URLs (docs/feeds.md "A credential in the URL").
  // A key made before keys kept their credential's hash keeps it now (the secret is at hand).
  get("/url-credential", async (c) => {
    const key = acceptedKey(c, deps);
    const secret = c.get("presentedKey").token ?? "";
    if (key.feed_mac_sha256 === undefined) {
      await keepApiKeyFeedMac(deps.store, key.id, feedMacHash(secret));
    }
    const credential = feedCredential(key.id, secret);
    const body = { credential, feeds_url: `${origin}${URL_CREDENTIAL_PREFIX}${credential}` };
    return respond.json(c, encoder.encode(JSON.stringify(body)), 200);
  });

  // Read-only, like the client API: known paths refuse other methods.
  return readOnly([
    "/electron/:slug/:file",
    "/tauri/:slug/:target/:arch/:current_version",
    "/sparkle/:slug/appcast.xml",
    "/files/:id/:filename",
    "/electron/:slug/:files/:version/:filename",
    "/sparkle/:slug/deltas/:id/:index/:filename",
    "/patches/:id/:from",
    "/url-credential",
    ...SQUIRREL_ROUTES,
    ...SQUIRREL_ROUTES.map((path) => `/c/:credential${path}`),
    ...VELOPACK_ROUTES,
    ...VELOPACK_ROUTES.map((path) => `/c/:credential${path}`),
  ]);
}
