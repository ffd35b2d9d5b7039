import type { FormError } from "../types.ts";
import { FieldError, FormErrorSummary, invalidProps } from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export const MIN_PASSWORD_LENGTH = 12;

export function PasswordPage({ ctx, error }: { ctx: PageContext; error?: FormError | null }) {
  return (
    <Layout ctx={ctx} title="Change password" nav="account">
      <section class="card narrow">
        <h1>Change password</h1>
        <p class="hint">
          Signed in as{" "}
          <strong>{ctx.username}</strong>. Changing the password signs out your other sessions.
        </p>
        <FormErrorSummary error={error} />
        <form method="post" action="/admin/account/password" class="stack">
          <CsrfInput token={ctx.csrfToken} />
          <input type="text" name="username" value={ctx.username} autocomplete="username" hidden />
          <div class="field">
            <label for="current-password">Current password</label>
            <input
              id="current-password"
              name="current_password"
              type="password"
              autocomplete="current-password"
              required
              {...invalidProps(error, "current_password", "current-password")}
            />
            <FieldError error={error} field="current_password" id="current-password" />
          </div>
          <div class="field">
            <label for="new-password">New password</label>
            <input
              id="new-password"
              name="new_password"
              type="password"
              autocomplete="new-password"
              minlength={MIN_PASSWORD_LENGTH}
              required
              aria-describedby="new-password-hint"
              {...invalidProps(error, "new_password", "new-password")}
            />
            <p class="hint" id="new-password-hint">At least {MIN_PASSWORD_LENGTH} characters.</p>
            <FieldError error={error} field="new_password" id="new-password" />
          </div>
          <div class="field">
            <label for="confirm-password">New password again</label>
            <input
              id="confirm-password"
              name="confirm_password"
              type="password"
              autocomplete="new-password"
              required
              {...invalidProps(error, "confirm_password", "confirm-password")}
            />
            <FieldError error={error} field="confirm_password" id="confirm-password" />
          </div>
          <button type="submit" class="button button-primary">Change password</button>
        </form>
      </section>
    </Layout>
  );
}
