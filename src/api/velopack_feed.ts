/**
 * The Velopack feed under /feeds/velopack/{slug}/{credential}/ (docs/feeds.md
 * "Velopack"): `releases.{channel}.json` and the packages it names. The
 * credential in the path stands for an API key (src/velopack/credential.ts)
 * and is checked exactly like the bearer key of the other feeds (permission,
 * scope, rate limit, the JSON errors); the release offered follows the same
 * rules (drafts and archived releases never, the rollout's bucket by the
 * client's `stagingId`, testers, halt, rollback). The packages download like
 * the API's file (Range, ETag, HEAD, counting); a delta's bytes count against
 * the release's whole size, like a block-map download (docs/feeds.md "What it
 * saves").
 */
import { Hono } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import type { Observer } from "../http/observe.ts";
import { FEED_ERRORS, SHA512_RETRY_AFTER_SECONDS } from "../feeds/paths.ts";
import { thenRead } from "../store/cache.ts";
import { getVelopackPackage, isVelopackFile, listVelopackDeltas } from "../store/velopack.ts";
import { createCredentialLookup } from "../velopack/credential.ts";
import { isVelopackFeedName, parseAssetName, velopackFeedJson } from "../velopack/feed.ts";
import { acceptedKey } from "./auth.ts";
import { createKeySurface, findVisibleProjectBySlug, findVisibleRelease } from "./surface.ts";

const encoder = new TextEncoder();

/** The routes, to mount at /feeds/velopack. */
export function createVelopackRoutes(deps: ServiceDeps, observer: Observer): Hono<AppEnv> {
  const { store } = deps;
  const routes = new Hono<AppEnv>();
  const surface = createKeySurface(
    { ...deps, keyLookup: createCredentialLookup(store) },
    observer,
    (c) => c.req.param("credential"),
  );

  const path = "/:slug/:credential/:file";
  routes.get(
    path,
    surface.endpoint(async (c) => {
      const key = acceptedKey(c, deps);
      const project = await findVisibleProjectBySlug(store, key, c.req.param("slug") ?? "");
      const file = c.req.param("file") ?? "";
      if (isVelopackFeedName(file)) {
        const stagingId = c.req.query("stagingId") || null;
        const release = await thenRead(
          surface.latestFor(key, project, {
            installId: () => stagingId,
            address: surface.askerOf(c).address,
          }),
          (r) => r,
        );
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
      const { release } = await findVisibleRelease(store, key, String(asset.releaseId));
      if (release.project_id !== project.id) throw new ApiError(404, API_ERRORS.resourceNotFound);
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
    }),
  );
  surface.refuseWrites(routes, [path]);
  return routes;
}
