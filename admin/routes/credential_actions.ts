/**
 * The state changes of a credential's list (enable, disable, and for publish
 * tokens delete), one POST each: the change through the request's store, its
 * audit entry, and back to the list with a flash. API keys and publish tokens
 * differ only in their words and paths.
 */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { NotFoundError } from "../../src/kv/errors.ts";
import type { Store } from "../../src/kv/store.ts";
import { ID_PATTERN } from "../../src/lib/limits.ts";
import { audit, redirectWithFlash } from "../context.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";

export interface CredentialActions {
  /** The list's path under /admin (`api-keys`), each action's route is `/{path}/:id/{action}`. */
  path: string;
  /** How the pages name one (`API key`, `publish token`); the audit names it in lower case. */
  noun: string;
  /** The audit action's prefix (`api_key`). */
  auditKind: "api_key" | "publish_token";
  /** Where the flash is shown. */
  location: string;
  /** Each action: its name, the change it makes, and the word the flash says it was. */
  actions: ReadonlyArray<
    readonly [string, (store: Store, id: number) => Promise<{ id: number; name: string }>, string]
  >;
}

export function addCredentialActions(
  admin: Hono<AdminEnv>,
  deps: RouteDeps,
  { path, noun, auditKind, location, actions }: CredentialActions,
): void {
  for (const [action, change, done] of actions) {
    admin.post(`/${path}/:id/${action}`, async (c) => {
      const raw = c.req.param("id");
      const notFound = new HTTPException(404, { message: `There is no ${noun} ${raw}.` });
      if (!ID_PATTERN.test(raw)) throw notFound;
      let credential: { id: number; name: string };
      try {
        credential = await change(c.var.store, Number(raw));
      } catch (error) {
        throw error instanceof NotFoundError ? notFound : error;
      }
      await audit(c, deps, {
        action: `${auditKind}.${action}`,
        target: `${noun.toLowerCase()} ${credential.id}`,
        details: `name "${credential.name}"`,
      });
      return redirectWithFlash(c, deps, {
        location,
        kind: "success",
        text: `${noun[0].toUpperCase()}${noun.slice(1)} "${credential.name}" was ${done}.`,
      });
    });
  }
}
