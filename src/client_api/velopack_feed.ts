/**
 * The Velopack feed (docs/feeds.md "Velopack"): `releases.{channel}.json` at
 * /feeds/velopack/{app}/ and the packages it names beside it, also under
 * /feeds/c/{credential}/ for the client, which sends no headers of its own
 * (src/feeds/url_credential.ts). The channel picks the platform's project
 * (src/client_api/app_project.ts); the release offered follows the rules of every
 * feed (key permission and scope, drafts and archived releases never, the
 * rollout's bucket by the client's `stagingId`, testers, halt, rollback).
 * The packages download like the API's file (Range, ETag, HEAD, counting); a
 * delta's bytes count against the release's whole size, like a block-map
 * download (docs/feeds.md "What it saves").
 */
import type { Handler, Hono } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { FEED_ERRORS, SHA512_RETRY_AFTER_SECONDS } from "../feeds/paths.ts";
import { velopackPlatforms } from "../feeds/platforms.ts";
import {
  getVelopackPackage,
  isVelopackFile,
  listVelopackDeltas,
} from "../artifact_records/velopack.ts";
import { isVelopackFeedName, parseAssetName, velopackFeedJson } from "../velopack/feed.ts";
import { findAppProject } from "./app_project.ts";
import { acceptedKey } from "./auth.ts";
import { findVisibleRelease, getWithCredential, type KeySurface } from "./surface.ts";

const encoder = new TextEncoder();

export const VELOPACK_ROUTES = ["/velopack/:app/:file"] as const;

export function addVelopackRoutes(
  feeds: Hono<AppEnv>,
  { deps, surface }: { deps: ServiceDeps; surface: KeySurface },
) {
  const { store } = deps;
  const handler: Handler<AppEnv> = async (c) => {
    const key = acceptedKey(c, deps);
    const app = c.req.param("app") ?? "";
    const file = c.req.param("file") ?? "";
    if (isVelopackFeedName(file)) {
      const channel = file.slice("releases.".length, -".json".length);
      const project = await findAppProject(store, key, {
        app,
        platforms: velopackPlatforms(channel),
      });
      const stagingId = c.req.query("stagingId") || null;
      const release = await surface.latestFor(key, project, {
        installId: () => stagingId,
        address: surface.askerOf(c).address,
      });
      if (!isVelopackFile(release.filename)) {
        throw new ApiError(409, FEED_ERRORS.velopackPackageMissing);
      }
      const pkg = await getVelopackPackage(store, release.id);
      if (pkg === null) {
        throw new ApiError(503, FEED_ERRORS.velopackPending, {
          "retry-after": String(SHA512_RETRY_AFTER_SECONDS),
        });
      }
      if (pkg.package_id === null) throw new ApiError(409, FEED_ERRORS.velopackPackageMissing);
      const localVersion = c.req.query("localVersion") ?? "";
      const delta = localVersion === "" ? null : (await listVelopackDeltas(store, release.id))
        .find((d) => d.from_version === localVersion) ?? null;
      return surface.respond.ok(c, encoder.encode(velopackFeedJson({ release, pkg, delta })));
    }
    const asset = parseAssetName(file);
    if (asset === null) throw new ApiError(404, API_ERRORS.resourceNotFound);
    const { project, release } = await findVisibleRelease(store, key, String(asset.releaseId));
    // The app's own project or one of its platforms' (`{app}-…`).
    if (project.slug !== app && !project.slug.startsWith(`${app}-`)) {
      throw new ApiError(404, API_ERRORS.resourceNotFound);
    }
    if (asset.kind === "full") return await surface.download(c, key, release);
    const delta = (await listVelopackDeltas(store, release.id))
      .find((d) => d.from_release_id === asset.fromReleaseId);
    if (delta === undefined) throw new ApiError(404, API_ERRORS.resourceNotFound);
    return await surface.downloadDelta(c, key, {
      release,
      file: {
        storage_key: delta.storage_key,
        checksum_sha256: delta.checksum_sha256,
        size_bytes: delta.size_bytes,
        filename: file,
      },
    });
  };
  for (const path of VELOPACK_ROUTES) getWithCredential({ routes: feeds, surface }, path, handler);
}
