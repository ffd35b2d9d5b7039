/**
 * The admin web UI under /admin (admin-contract.md): server-rendered pages
 * with Hono JSX on top of the store layer.
 *
 * Order of the gates: response headers → "/admin/x/" redirects to "/admin/x" →
 * static files → browser origin check
 * → sign-in routes (own CSRF cookie) → session → release upload (streams and
 * checks its token itself) → CSRF token of every other POST → the pages.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { trimTrailingSlash } from "hono/trailing-slash";
import { ADMIN_RESPONSE_HEADERS } from "./headers.ts";
import { originGuard, requireCsrfToken, requireSession } from "./guards.ts";
import { addAccountRoutes, addLoginRoutes } from "./routes/auth.tsx";
import { addApiKeyRoutes } from "./routes/api_keys.tsx";
import { addOverviewRoutes } from "./routes/overview.tsx";
import { addProjectRoutes } from "./routes/projects.tsx";
import { addReleaseRoutes } from "./routes/releases.tsx";
import { addUploadRoute } from "./routes/upload.tsx";
import { addStaticRoutes } from "./static.ts";
import type { AdminEnv, AppDeps } from "./types.ts";

export { bootstrapAdmin } from "./accounts.ts";
export { isAdminPath, renderAdminError, renderAdminNotFound } from "./errors.tsx";

const FORM_LIMIT_BYTES = 1024 * 1024;

export function createAdminRoutes(deps: AppDeps): Hono<AdminEnv> {
  const admin = new Hono<AdminEnv>();

  admin.use(async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(ADMIN_RESPONSE_HEADERS)) {
      if (name === "cache-control" && c.res.headers.has(name)) continue;
      c.res.headers.set(name, value);
    }
  });
  admin.use(trimTrailingSlash({ alwaysRedirect: true }));
  addStaticRoutes(admin);
  admin.use(originGuard(deps));
  addLoginRoutes(admin, deps);
  admin.use(requireSession(deps));
  addUploadRoute(admin, deps);
  admin.post(
    "*",
    bodyLimit({
      maxSize: FORM_LIMIT_BYTES,
      onError: () => {
        throw new HTTPException(413, { message: "The form is too large." });
      },
    }),
    requireCsrfToken(),
  );
  addOverviewRoutes(admin, deps);
  addAccountRoutes(admin, deps);
  addProjectRoutes(admin, deps);
  addReleaseRoutes(admin, deps);
  addApiKeyRoutes(admin, deps);
  return admin;
}
