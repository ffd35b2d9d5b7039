/** The pages of sign-in through an OpenID Connect provider (docs/sso.md). */
import { Layout, type PageContext } from "./layout.tsx";

/** A sign-in through the provider that was refused, and why. */
export function SsoRefusedPage(
  { ctx, status, message, providerName }: {
    ctx: PageContext;
    status: number;
    message: string;
    providerName: string;
  },
) {
  return (
    <Layout ctx={ctx} title="Sign-in refused">
      <section class="card narrow" data-sso-refused>
        <p class="muted">Error {status}</p>
        <h1>Sign-in refused</h1>
        <p role="alert" data-form-error>{message}</p>
        <p>
          <a href="/admin/login/sso" class="button button-primary">
            Sign in with {providerName} again
          </a>{" "}
          <a href="/admin/login" class="button">Back to the sign-in page</a>
        </p>
      </section>
    </Layout>
  );
}

/** The button that starts a sign-in through the provider. */
export function SsoButton({ providerName }: { providerName: string }) {
  return (
    <p>
      <a href="/admin/login/sso" class="button button-primary" data-sso-sign-in>
        Sign in with {providerName}
      </a>
    </p>
  );
}
