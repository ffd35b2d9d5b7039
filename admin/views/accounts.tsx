/** The accounts page (admins only): every account with its role, and the create form. */
import { PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH } from "../../src/lib/limits.ts";
import {
  ADMIN_ROLES,
  type AdminRole,
  type AdminUser,
  roleOf,
} from "../../src/accounts/admin_users.ts";
import type { FormError } from "../types.ts";
import {
  ActionsCell,
  DataTable,
  FormErrorSummary,
  InputField,
  PostButton,
  Time,
} from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export interface AccountFormValues {
  username: string;
  role: AdminRole;
}

const ROLE_LABELS: Record<AdminRole, string> = {
  admin: "admin: everything",
  publisher: "publisher: projects' releases only",
  viewer: "viewer: read only",
};

export function AccountsPage(
  { ctx, users, values, error }: {
    ctx: PageContext;
    users: readonly AdminUser[];
    values: AccountFormValues;
    error?: FormError;
  },
) {
  return (
    <Layout ctx={ctx} title="Accounts" nav="accounts">
      <h1>Accounts</h1>
      <p class="hint">
        Each person signs in with their own account; the audit log names who did what. An{" "}
        <strong>admin</strong> may do everything, a <strong>publisher</strong>{" "}
        uploads releases and changes their state, notes and build (no keys, tokens or accounts), a
        {" "}
        <strong>viewer</strong>{" "}
        reads every page but the accounts and changes nothing. The last admin can be neither removed
        nor demoted.
      </p>
      <FormErrorSummary error={error?.field === "role" ? error : undefined} />
      <section class="card" id="account-list">
        <h2>Accounts ({users.length})</h2>
        <DataTable columns={["User name", "Role", "Created"]} actions>
          {users.map((user) => (
            <tr data-account={user.username}>
              <td data-label="User name">
                {user.username}
                {user.username === ctx.username && <span class="muted">(you)</span>}
              </td>
              <td data-label="Role">{roleOf(user)}</td>
              <td data-label="Created">
                <Time iso={user.created_at} />
              </td>
              <ActionsCell>
                <form
                  method="post"
                  action={`/admin/accounts/${encodeURIComponent(user.username)}/role`}
                  class="inline-form role-form"
                >
                  <CsrfInput token={ctx.csrfToken} />
                  <select name="role" aria-label={`Role of ${user.username}`}>
                    {ADMIN_ROLES.map((role) => (
                      <option value={role} selected={role === roleOf(user)}>{role}</option>
                    ))}
                  </select>
                  <button type="submit" class="button button-small">Change role</button>
                </form>
                <PostButton
                  action={`/admin/accounts/${encodeURIComponent(user.username)}/delete`}
                  csrfToken={ctx.csrfToken}
                  label="Remove"
                />
              </ActionsCell>
            </tr>
          ))}
        </DataTable>
      </section>
      <section class="card narrow" id="new-account">
        <h2>New account</h2>
        <form method="post" action="/admin/accounts" class="stack">
          <CsrfInput token={ctx.csrfToken} />
          <FormErrorSummary error={error?.field === "role" ? undefined : error} />
          <InputField
            id="account-username"
            name="username"
            label="User name"
            hint="Letters, digits, . _ @ and -."
            value={values.username}
            required
            maxlength={USERNAME_MAX_LENGTH}
            autocomplete="off"
            error={error}
          />
          <InputField
            id="account-password"
            name="password"
            label="Password"
            type="password"
            hint={
              <>
                At least {PASSWORD_MIN_LENGTH}{" "}
                characters. Give it to the person; they can change it under their name.
              </>
            }
            minlength={PASSWORD_MIN_LENGTH}
            autocomplete="new-password"
            required
            error={error}
          />
          <fieldset class="field">
            <legend>Role</legend>
            {ADMIN_ROLES.map((role) => (
              <label>
                <input type="radio" name="role" value={role} checked={role === values.role} />{" "}
                {ROLE_LABELS[role]}
              </label>
            ))}
          </fieldset>
          <button type="submit" class="button button-primary">Create account</button>
        </form>
      </section>
    </Layout>
  );
}
