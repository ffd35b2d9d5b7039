/**
 * The TUF repositories under /tuf (docs/tuf.md): each project's metadata and
 * targets, protected exactly like the client API and the updater feeds
 * (src/client_api/surface.ts): the bearer key, its permission and scope (a project
 * the key may not see is a 404), the rate limit and JSON errors. A target is
 * the API's download of the release (Range, ETag, HEAD, counting).
 */
import type { Context } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS, ApiError } from "../http/errors.ts";
import type { Observer } from "../http/observe.ts";
import { getRelease } from "../releases/releases.ts";
import {
  getLatestTufRoot,
  getTufFile,
  getTufRootByVersion,
  type TufOnlineRole,
  type TufState,
} from "../tuf/records.ts";
import type { Project } from "../projects/types.ts";
import {
  createOnlineKeys,
  refreshRepository,
  targetFileName,
  TufSigningError,
} from "../tuf/repository.ts";
import { parseMetadataFile, TUF_ERRORS } from "../tuf/paths.ts";
import { ID_PATTERN } from "../lib/limits.ts";
import { acceptedKey } from "./auth.ts";
import { createKeyRoutes, type SurfaceRoutes } from "./surface.ts";

const encoder = new TextEncoder();

export function createTufRoutes(deps: ServiceDeps, observer: Observer): SurfaceRoutes {
  const { store } = deps;
  const { surface, get, readOnly } = createKeyRoutes(deps, observer);
  const online = createOnlineKeys(deps.config.dataDir);
  /** When each project's signing failure was last logged (ms). */
  const reported = new Map<number, number>();

  /** The project's state after a refresh; a stored state when signing fails; else 503. */
  const freshState = async (project: Project): Promise<TufState> => {
    try {
      const state = await refreshRepository(store, { project, online });
      if (state === null) throw new ApiError(404, API_ERRORS.resourceNotFound);
      return state;
    } catch (error) {
      if (!(error instanceof TufSigningError)) throw error;
      // Once a minute per project: a client polling a stuck repository does not flood the log.
      if (Date.now() - (reported.get(project.id) ?? 0) > 60_000) {
        reported.set(project.id, Date.now());
        console.error(`tuf metadata of ${project.slug} could not be signed: ${error.message}`);
      }
      const stored = await refreshRepository(store, { project, online, readOnly: true });
      if (stored === null || stored.timestamp.version === 0) {
        throw new ApiError(503, TUF_ERRORS.unavailable);
      }
      return stored;
    }
  };

  const answer = (c: Context<AppEnv>, text: string | null) => {
    if (text === null) throw new ApiError(404, API_ERRORS.resourceNotFound);
    return surface.respond.ok(c, encoder.encode(text));
  };

  // GET /tuf/{slug}/metadata/{timestamp.json | N.root.json | N.snapshot.json | N.targets.json}
  get(
    "/:slug/metadata/:file",
    async (c) => {
      const project = await surface.visibleProject(c);
      const asked = parseMetadataFile(c.req.param("file") ?? "");
      if (asked === null) throw new ApiError(404, API_ERRORS.resourceNotFound);
      if (asked.role === "root") {
        const root = asked.version === null
          ? await getLatestTufRoot(store)
          : await getTufRootByVersion(store, asked.version);
        return answer(c, root?.json ?? null);
      }
      const role: TufOnlineRole = asked.role;
      // A versioned file never changes: only the newest ones need the repository brought up to date.
      const version = asked.version ?? (await freshState(project))[role].version;
      return answer(c, await getTufFile(store, project.id, { role, version }));
    },
  );

  // GET|HEAD /tuf/{slug}/targets/{slug}/{releaseId}/{sha256}.{file name} (or without the hash)
  get(
    "/:slug/targets/:targetSlug/:id/:file",
    async (c) => {
      const key = acceptedKey(c, deps);
      const project = await surface.visibleProject(c, key);
      const id = c.req.param("id") ?? "";
      const release = ID_PATTERN.test(id) ? await getRelease(store, Number(id)) : null;
      if (
        c.req.param("targetSlug") !== project.slug || release === null ||
        release.project_id !== project.id || release.state !== "active"
      ) {
        throw new ApiError(404, API_ERRORS.resourceNotFound);
      }
      const name = targetFileName(release.filename);
      const file = c.req.param("file");
      if (file !== name && file !== `${release.checksum_sha256}.${name}`) {
        throw new ApiError(404, API_ERRORS.resourceNotFound);
      }
      return await surface.download(c, key, release);
    },
  );

  // Read-only, like the client API: known paths refuse other methods.
  return readOnly(["/:slug/metadata/:file", "/:slug/targets/:targetSlug/:id/:file"]);
}
