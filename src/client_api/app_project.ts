/**
 * The project a feed URL's app name picks for the client's platform
 * (docs/feeds.md "One URL per app", src/feeds/platforms.ts): `{app}` itself
 * when the key sees such a project, else the first `{app}-{platform}` the key
 * sees. A project stays one platform's stream; the key's scope applies to the
 * project picked.
 */
import { API_ERRORS, ApiError } from "../http/errors.ts";
import { isSlug } from "../lib/limits.ts";
import { projectVisible } from "../credentials/access.ts";
import { type MaybeAsync, thenRead } from "../kv/cache.ts";
import { getProjectBySlug } from "../projects/projects.ts";
import type { Project } from "../projects/types.ts";
import type { ApiKey } from "../credentials/types.ts";
import type { Store } from "../kv/store.ts";

/** The project `key` sees for `app` on `platforms` (most specific first); else the spec's 404. */
export function findAppProject(
  store: Store,
  key: ApiKey,
  { app, platforms }: { app: string; platforms: readonly string[] },
): MaybeAsync<Project> {
  const at = (index: number): MaybeAsync<Project> => {
    if (index > platforms.length) throw new ApiError(404, API_ERRORS.resourceNotFound);
    const slug = index === 0 ? app : `${app}-${platforms[index - 1]}`;
    // A slug that cannot exist is not looked up (and cannot overflow a KV key).
    return thenRead(
      isSlug(slug) ? getProjectBySlug(store, slug) : null,
      (project) => project !== null && projectVisible(key, project) ? project : at(index + 1),
    );
  };
  return at(0);
}
