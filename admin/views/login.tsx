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
          <div class="field">
            <label for="username">Username</label>
            <input
              id="username"
              name="username"
              type="text"
              value={username ?? ""}
              autocomplete="username"
              autocapitalize="none"
              spellcheck={false}
              required
              autofocus={!username}
            />
          </div>
          <div class="field">
            <label for="password">Password</label>
            <input
              id="password"
              name="password"
              type="password"
              autocomplete="current-password"
              required
              autofocus={!!username}
            />
          </div>
          <button type="submit" class="button button-primary">Sign in</button>
        </form>
      </section>
    </Layout>
  );
}
