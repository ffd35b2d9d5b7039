import { InputField } from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";
import { SsoButton } from "./sso.tsx";

/** How the sign-in page offers to sign in: a provider's button, the password form, or both. */
export interface SignInChoices {
  /** The OpenID Connect provider's name (docs/sso.md), when sign-in through one is set up. */
  providerName?: string;
  /** The password form (off when local passwords are off, except on the break-glass page). */
  passwordForm: boolean;
  /** Said above the password form (the break-glass page says who may use it). */
  note?: string;
}

export function LoginPage(
  { ctx, csrfToken, username, error, choices = { passwordForm: true } }: {
    ctx: PageContext;
    csrfToken: string;
    username?: string;
    error?: string;
    choices?: SignInChoices;
  },
) {
  return (
    <Layout ctx={ctx} title="Sign in">
      <section class="card narrow">
        <h1>Sign in</h1>
        {error && <div class="flash flash-error" role="alert" data-form-error>{error}</div>}
        {choices.providerName !== undefined && <SsoButton providerName={choices.providerName} />}
        {choices.providerName !== undefined && choices.passwordForm && (
          <p class="or-divider" data-sign-in-or>
            <span>or with a password</span>
          </p>
        )}
        {choices.note && <p class="muted" data-break-glass>{choices.note}</p>}
        {choices.passwordForm && (
          <PasswordForm
            csrfToken={csrfToken}
            username={username}
            secondary={choices.providerName !== undefined}
          />
        )}
      </section>
    </Layout>
  );
}

/** The password form; `secondary` beside the provider's button (which is the first choice). */
function PasswordForm(
  { csrfToken, username, secondary }: { csrfToken: string; username?: string; secondary: boolean },
) {
  return (
    <form method="post" action="/admin/login" class="stack">
      <CsrfInput token={csrfToken} />
      <InputField
        id="username"
        name="username"
        label="Username"
        value={username ?? ""}
        autocomplete="username"
        autocapitalize="none"
        spellcheck={false}
        required
        autofocus={!username && !secondary}
      />
      <InputField
        id="password"
        name="password"
        label="Password"
        type="password"
        autocomplete="current-password"
        required
        autofocus={!!username}
      />
      <button type="submit" class={secondary ? "button" : "button button-primary"}>
        Sign in{secondary ? " with password" : ""}
      </button>
    </form>
  );
}
