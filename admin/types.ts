import type { ServiceDeps as HttpServiceDeps } from "../src/http/app_env.ts";
import type { SsoService } from "../src/sso/mod.ts";
import type { AdminRole } from "../src/accounts/admin_users.ts";
import type { AdminSession } from "../src/accounts/sessions.ts";
import type { MultipartPart } from "../src/http/multipart.ts";
import type { Store } from "../src/kv/store.ts";

/** What the admin UI is built from: the service's deps, and sign-in through a provider if set up. */
export type ServiceDeps = HttpServiceDeps & {
  /** Sign-in through an OpenID Connect provider (docs/sso.md), when one is set up. */
  sso?: SsoService;
};

/**
 * What a route handler is given: the service's deps without their store. A
 * handler reads and writes through the request's store (`c.var.store`), so a
 * change cannot skip the request's audit entry (guards.ts `auditChanges`).
 */
export type RouteDeps = Omit<ServiceDeps, "store">;

/** `deps` without their store, as the route handlers get them (`RouteDeps`). */
export function routeDeps(deps: ServiceDeps): RouteDeps {
  const { store: _store, ...routes } = deps;
  return routes;
}

export interface Flash {
  kind: "success" | "error";
  text: string;
}

/** Every value of every field of a posted form, in order. */
export type FormValues = Record<string, string[]>;

export interface AdminEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    /**
     * The store this request reads and writes through: for a signed-in
     * admin's POST, one whose commits carry the request's audit entry
     * (guards.ts `auditChanges`).
     */
    store: Store;
    session: AdminSession;
    sessionId: string;
    /** The signed-in account's role (guards.ts `requireRole`). */
    role: AdminRole;
    form: FormValues;
    /** A streamed multipart form whose CSRF token is checked on the way (guards.ts). */
    parts: AsyncIterable<MultipartPart>;
  };
}

/** A message about one form field, shown beside it and at the top of the form. */
export interface FormError {
  field: string;
  message: string;
}
