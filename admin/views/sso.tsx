/** The pages of sign-in through an OpenID Connect provider (docs/sso.md). */
import type { SsoRefusalKind } from "../../src/sso/mod.ts";
import { Layout, type PageContext } from "./layout.tsx";

/** The heading of each kind of refusal (src/sso/mod.ts `SsoRefusalKind`). */
function refusalTitle(kind: SsoRefusalKind, providerName: string): string {
  switch (kind) {
    case "refused":
      return "You cannot sign in here";
    case "restart":
      return "Start the sign-in again";
    case "failed":
      return "Sign-in did not work";
    case "unreachable":
      return `${providerName} cannot be reached`;
  }
}

/**
 * A sign-in through the provider that did not get through: what happened and what to do, in plain
 * words (the details are in the log and the audit log). After a refusal the way on is to sign out
 * at the provider first (`signOutUrl`), or a plain "sign in again" would come back here.
 */
export function SsoRefusedPage(
  { ctx, status, kind, shown, providerName, signOutUrl, passwords }: {
    ctx: PageContext;
    status: number;
    kind: SsoRefusalKind;
    shown: string;
    providerName: string;
    /** The provider's end-session URL, which comes back to the sign-in page. */
    signOutUrl: string | null;
    /** Whether local passwords are on (the password form is an alternative). */
    passwords: boolean;
  },
) {
  const title = refusalTitle(kind, providerName);
  return (
    <Layout ctx={ctx} title={title}>
      <section class="card narrow" data-sso-refused={kind}>
        <h1>{title}</h1>
        <p role="alert" data-form-error>{shown}</p>
        {kind === "refused"
          ? (
            <>
              {signOutUrl !== null
                ? (
                  <p class="actions">
                    <a href={signOutUrl} class="button button-primary" data-provider-sign-out>
                      Sign out at {providerName}, then sign in again
                    </a>
                    <a href="/admin/login" class="button">Back to the sign-in page</a>
                  </p>
                )
                : (
                  <>
                    <p class="hint">
                      You are still signed in at{" "}
                      {providerName}: to sign in here as someone else, sign out there first.
                    </p>
                    <p class="actions">
                      <a href="/admin/login" class="button">Back to the sign-in page</a>
                    </p>
                  </>
                )}
            </>
          )
          : (
            <p class="actions">
              <a href="/admin/login/sso" class="button button-primary" data-sso-again>
                {kind === "unreachable" ? "Try again" : `Sign in with ${providerName} again`}
              </a>
              <a href="/admin/login" class="button">
                {kind === "unreachable" && passwords
                  ? "Sign in with a password"
                  : "Back to the sign-in page"}
              </a>
            </p>
          )}
        <p class="muted">Error {status}</p>
      </section>
    </Layout>
  );
}

/** The button that starts a sign-in through the provider. */
export function SsoButton({ providerName }: { providerName: string }) {
  return (
    <p>
      <a href="/admin/login/sso" class="button button-primary button-wide" data-sso-sign-in>
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
