/**
 * Which account roles may use which admin route (docs/admin-ui.md "Accounts and roles"). The
 * table is read by `requireRole` (guards.ts), the one place a role is enforced; handlers never
 * check roles. Routes are named as registered: `METHOD /admin/path/:param`.
 */
import type { AdminRole } from "../src/accounts/admin_users.ts";

const EVERYONE: readonly AdminRole[] = ["admin", "publisher", "viewer"];
const RELEASE_WRITERS: readonly AdminRole[] = ["admin", "publisher"];
const READERS: readonly AdminRole[] = ["admin", "viewer"];
const ADMINS: readonly AdminRole[] = ["admin"];

/**
 * Routes whose roles differ from the default. The default: a `GET` is for `admin` and `viewer`
 * (a viewer reads every page but the admins-only ones below), anything else for `admin` only; so
 * a route added without an entry here is never open to a publisher, nor a write open to a viewer.
 */
const ROUTE_ROLES: ReadonlyMap<string, readonly AdminRole[]> = new Map([
  // Every account: its own session and password.
  ["GET /admin", EVERYONE],
  ["POST /admin/logout", EVERYONE],
  ["GET /admin/account/password", EVERYONE],
  ["POST /admin/account/password", EVERYONE],
  // Reading projects, releases and the audit log.
  ["GET /admin/audit", EVERYONE],
  ["GET /admin/projects", EVERYONE],
  ["GET /admin/projects/:slug", EVERYONE],
  ["GET /admin/projects/:slug/releases", EVERYONE],
  ["GET /admin/projects/:slug/rollout", EVERYONE],
  ["GET /admin/projects/:slug/feeds", EVERYONE],
  ["GET /admin/projects/:slug/settings", EVERYONE],
  ["GET /admin/releases/:id", EVERYONE],
  ["GET /admin/releases/:id/download", EVERYONE],
  // Projects' releases: upload, state, the chosen latest, notes and build.
  ["POST /admin/projects/:slug/releases", RELEASE_WRITERS],
  ["POST /admin/releases/:id", RELEASE_WRITERS],
  ["POST /admin/releases/:id/archive", RELEASE_WRITERS],
  ["POST /admin/releases/:id/activate", RELEASE_WRITERS],
  ["POST /admin/releases/:id/publish", RELEASE_WRITERS],
  ["POST /admin/releases/:id/make-latest", RELEASE_WRITERS],
  // Staged rollouts (docs/rollouts.md), like the publishing API's release_state permission.
  ["POST /admin/projects/:slug/rollout", RELEASE_WRITERS],
  ["POST /admin/projects/:slug/rollout/change", RELEASE_WRITERS],
  ["POST /admin/projects/:slug/rollout/halt", RELEASE_WRITERS],
  ["POST /admin/projects/:slug/rollout/resume", RELEASE_WRITERS],
  ["POST /admin/projects/:slug/rollout/complete", RELEASE_WRITERS],
  ["POST /admin/projects/:slug/rollout/end", RELEASE_WRITERS],
  // Release safety (docs/rollouts.md "Health gates", "A way back"), likewise.
  ["POST /admin/projects/:slug/rollout/gates", RELEASE_WRITERS],
  ["POST /admin/projects/:slug/rollout/rollback", RELEASE_WRITERS],
  ["POST /admin/projects/:slug/rollout/policy", RELEASE_WRITERS],
  // Accounts are for admins only, reading included.
  ["GET /admin/accounts", ADMINS],
  // Signing keys (docs/signing.md) are the owner's: admins only, reading included.
  ["GET /admin/signing-keys", ADMINS],
  // Webhooks (docs/webhooks.md) hold their endpoints' signing secrets: admins only.
  ["GET /admin/webhooks", ADMINS],
  ["GET /admin/webhooks/:id", ADMINS],
  ["GET /admin/webhooks/:id/delete", ADMINS],
  ["GET /admin/webhooks/:id/deliveries/:delivery", ADMINS],
]);

/** The roles that may use `route` (`METHOD /admin/path`, as registered). */
export function rolesFor(route: string): readonly AdminRole[] {
  return ROUTE_ROLES.get(route) ?? (route.startsWith("GET ") ? READERS : ADMINS);
}

/** What a refused account is told. */
export function refusalFor(role: AdminRole): string {
  return role === "viewer"
    ? "Your account is a viewer: it can read these pages but not change anything."
    : "Your account is a publisher: it can work on projects' releases only. " +
      "Ask an admin for anything else.";
}

/**
 * Whether `role` may use `route` (`METHOD /admin/path/:param`, as registered): views ask it
 * before they show a control, so an account sees only what it can use. `requireRole` still
 * refuses the request itself.
 */
export function can(role: AdminRole | undefined, route: string): boolean {
  return rolesFor(route).includes(role ?? "admin");
}
