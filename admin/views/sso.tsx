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

/**
 * Signed out here; on to the provider's end-session page (the `refresh` header goes there, as a
 * redirect of the sign-out form would be stopped by the admin pages' `form-action 'self'`).
 */
export function SsoSignedOutPage(
  { ctx, providerName, endSessionUrl }: {
    ctx: PageContext;
    providerName: string;
    endSessionUrl: string;
  },
) {
  return (
    <Layout ctx={ctx} title="Signed out">
      <section class="card narrow">
        <h1>Signed out</h1>
        <p>You are signed out here. Signing you out at {providerName} too…</p>
        <p>
          <a href={endSessionUrl} class="button button-primary" data-provider-sign-out>
            Continue to {providerName}
          </a>
        </p>
      </section>
    </Layout>
  );
}
