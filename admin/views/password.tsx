import { PASSWORD_MIN_LENGTH } from "../../src/lib/limits.ts";
import type { FormError } from "../types.ts";
import { FormErrorSummary, InputField } from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

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
          <InputField
            id="current-password"
            name="current_password"
            label="Current password"
            type="password"
            error={error}
            autocomplete="current-password"
            required
          />
          <InputField
            id="new-password"
            name="new_password"
            label="New password"
            type="password"
            error={error}
            autocomplete="new-password"
            minlength={PASSWORD_MIN_LENGTH}
            required
            hint={<>At least {PASSWORD_MIN_LENGTH} characters.</>}
          />
          <InputField
            id="confirm-password"
            name="confirm_password"
            label="New password again"
            type="password"
            error={error}
            autocomplete="new-password"
            required
          />
          <button type="submit" class="button button-primary">Change password</button>
        </form>
      </section>
    </Layout>
  );
}
