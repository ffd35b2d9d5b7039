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
        {choices.note && <p class="muted" data-break-glass>{choices.note}</p>}
        {choices.passwordForm && <PasswordForm csrfToken={csrfToken} username={username} />}
      </section>
    </Layout>
  );
}

function PasswordForm({ csrfToken, username }: { csrfToken: string; username?: string }) {
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
        autofocus={!username}
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
      <button type="submit" class="button button-primary">Sign in</button>
    </form>
  );
}
