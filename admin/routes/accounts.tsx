/**
 * Admin accounts (docs/admin-ui.md "Accounts and roles"): list, create with a role, change a
 * role, remove. Only admins reach these routes (admin/roles.ts); the last admin stays.
 */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../../src/lib/limits.ts";
import { hashPassword } from "../../src/lib/passwords.ts";
import {
  type AdminRole,
  createAdminAccount,
  deleteAdminUser,
  isAdminRole,
  LastAdminError,
  listAdminUsers,
  requireUsername,
  roleOf,
  setAdminRole,
} from "../../src/accounts/admin_users.ts";
import { NotFoundError, ValidationError } from "../../src/kv/errors.ts";
import { deleteAdminSessionsOfUser } from "../../src/accounts/sessions.ts";
import { accountTarget } from "../accounts.ts";
import { type AdminContext, audit, pageContext, redirectWithFlash } from "../context.ts";
import { field, formErrorOf } from "../forms.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import { type AccountFormValues, AccountsPage } from "../views/accounts.tsx";

const EMPTY_FORM: AccountFormValues = { username: "", role: "publisher" };

function roleField(value: string): AdminRole {
  if (!isAdminRole(value)) {
    throw new ValidationError("role", "choose a role: admin, publisher or viewer");
  }
  return value;
}

export function addAccountsRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  async function renderPage(c: AdminContext, values: AccountFormValues, error?: FormError) {
    const users = await listAdminUsers(c.var.store);
    return c.html(
      <AccountsPage ctx={pageContext(c, deps)} users={users} values={values} error={error} />,
      error ? 400 : 200,
    );
  }

  function notFound(username: string): HTTPException {
    return new HTTPException(404, { message: `There is no account "${username}".` });
  }

  admin.get("/accounts", (c) => renderPage(c, EMPTY_FORM));

  admin.post("/accounts", async (c) => {
    const form = c.get("form");
    const username = field(form, "username").trim();
    const rawRole = field(form, "role");
    const values = { username, role: isAdminRole(rawRole) ? rawRole : EMPTY_FORM.role };
    const password = field(form, "password");
    let role: AdminRole;
    try {
      requireUsername(username);
      role = roleField(rawRole);
      if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
        throw new ValidationError(
          "password",
          `the password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`,
        );
      }
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return await renderPage(c, values, formErrorOf(error));
    }
    const passwordHash = await hashPassword(password);
    const user = await createAdminAccount(c.var.store, { username, passwordHash, role });
    if (user === null) {
      return await renderPage(c, values, {
        field: "username",
        message: `the user name "${username}" is taken`,
      });
    }
    await audit(c, deps, {
      action: "account.create",
      target: accountTarget(username),
      details: `role ${role}`,
    });
    return redirectWithFlash(c, deps, {
      location: "/admin/accounts",
      kind: "success",
      text: `The account "${username}" (${role}) was created.`,
    });
  });

  admin.post("/accounts/:username/role", async (c) => {
    const username = c.req.param("username");
    let change;
    try {
      change = await setAdminRole(c.var.store, username, roleField(field(c.get("form"), "role")));
    } catch (error) {
      if (error instanceof NotFoundError) throw notFound(username);
      if (!(error instanceof ValidationError)) throw error;
      return await renderPage(c, EMPTY_FORM, formErrorOf(error));
    }
    const [before, after] = [roleOf(change.before), roleOf(change.after)];
    await audit(c, deps, {
      action: "account.role",
      target: accountTarget(username),
      details: `${before} -> ${after}`,
    });
    return redirectWithFlash(c, deps, {
      location: "/admin/accounts",
      kind: "success",
      text: `The account "${username}" is now ${after}.`,
    });
  });

  admin.post("/accounts/:username/delete", async (c) => {
    const username = c.req.param("username");
    let removed;
    try {
      removed = await deleteAdminUser(c.var.store, username);
    } catch (error) {
      if (error instanceof NotFoundError) throw notFound(username);
      if (!(error instanceof LastAdminError)) throw error;
      return await renderPage(c, EMPTY_FORM, formErrorOf(error));
    }
    const ended = await deleteAdminSessionsOfUser(c.var.store, username);
    await audit(c, deps, {
      action: "account.delete",
      target: accountTarget(username),
      details: `role ${roleOf(removed)}; ${ended} sessions ended`,
    });
    const self = username === c.get("session").username;
    return redirectWithFlash(c, deps, {
      location: self ? "/admin/login" : "/admin/accounts",
      kind: "success",
      text: `The account "${username}" was removed.`,
    });
  });
}
