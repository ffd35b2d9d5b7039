import { InputField } from "./components.tsx";
import { CsrfInput, Layout, type PageContext } from "./layout.tsx";

export function LoginPage(
  { ctx, csrfToken, username, error }: {
    ctx: PageContext;
    csrfToken: string;
    username?: string;
    error?: string;
  },
) {
  return (
    <Layout ctx={ctx} title="Sign in">
      <section class="card narrow">
        <h1>Sign in</h1>
        {error && <div class="flash flash-error" role="alert" data-form-error>{error}</div>}
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
      </section>
    </Layout>
  );
}
