/**
 * Sign-in through an OpenID Connect provider (docs/sso.md): the start, the provider's answer,
 * what the sign-in page offers (the break-glass password form when local passwords are off), the
 * sign-out at the provider, and the check of a signed-in session's groups once its check interval
 * has passed.
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import {
  describeProviderError,
  type SsoRefused,
  type SsoService,
  type SsoSignedIn,
} from "../../src/sso/mod.ts";
import { createAdminSession, deleteAdminSession } from "../../src/accounts/sessions.ts";
import { accountTarget } from "../accounts.ts";
import { audit, pageContext, redirectWithFlash } from "../context.ts";
import {
  clearLoginCsrfCookie,
  clearSessionCookie,
  getSessionCookie,
  setFlash,
  setSessionCookie,
} from "../cookies.ts";
import { sessionPolicy } from "../guards.ts";
import { addressOf } from "../../src/http/client_address.ts";
import type { AdminEnv, Flash, RouteDeps } from "../types.ts";
import type { SignInChoices } from "../views/login.tsx";
import { SsoRefusedPage, SsoSignedOutPage } from "../views/sso.tsx";
import { ssoSentence } from "../sso_sentences.ts";

/** Where the provider sends the browser back to, under /admin: the callback URL to register. */
export const SSO_CALLBACK_PATH = "/login/sso/callback";
/** Binds a sign-in's `state` to the browser that began it (Lax: it comes back by a top-level GET). */
const STATE_COOKIE = "uds_oidc_state";
const STATE_COOKIE_PATH = "/admin/login/sso";

/** What the sign-in page offers, from the settings. */
export function signInChoices(deps: RouteDeps, { breakGlass = false } = {}): SignInChoices {
  const settings = deps.sso?.settings;
  if (settings === undefined) return { passwordForm: true };
  if (settings.localPasswords) return { providerName: settings.providerName, passwordForm: true };
  return breakGlass
    ? {
      providerName: settings.providerName,
      passwordForm: true,
      note: `Break-glass sign-in for when ${settings.providerName} is down: only the local ` +
        `accounts named by APP_OIDC_BREAK_GLASS_USERS can sign in here.`,
    }
    : { providerName: settings.providerName, passwordForm: false };
}

/** Whether `username` may sign in with a local password under the settings. */
export function mayUsePassword(deps: RouteDeps, username: string): boolean {
  const settings = deps.sso?.settings;
  return settings === undefined || settings.localPasswords ||
    settings.breakGlassUsers.includes(username);
}

/** The page after a sign-out that goes on to the provider's end-session URL. */
export function signedOutAtProvider(
  c: Context<AdminEnv>,
  deps: RouteDeps,
  { flash, endAtProvider }: { flash: Flash; endAtProvider: URL },
): Response | Promise<Response> {
  setFlash(c, deps.config, flash);
  c.header("refresh", `0; url=${endAtProvider.href}`);
  return c.html(
    <SsoSignedOutPage
      ctx={{ serviceName: deps.config.serviceName }}
      providerName={deps.sso?.settings.providerName ?? ""}
      endSessionUrl={endAtProvider.href}
    />,
  );
}

/** The routes of sign-in through the provider; none when no provider is set up. */
export function addSsoRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  const sso = deps.sso;
  if (sso === undefined) return;
  const { config } = deps;
  const providerName = sso.settings.providerName;

  /** What the person is told, in plain words; the details went to the log and the audit. */
  async function refusedPage(
    c: Context<AdminEnv>,
    refusal: Pick<SsoRefused, "status" | "kind" | "idToken"> & { shown: string },
  ) {
    // After a refusal the provider's session is still open: signing out there first lets
    // another person sign in (a plain "sign in again" would come back to this page).
    const signOutUrl = refusal.kind === "refused"
      ? await sso!.endSessionUrl(refusal.idToken, `${config.baseUrl}/admin/login`)
      : null;
    return c.html(
      <SsoRefusedPage
        ctx={pageContext(c, deps)}
        status={refusal.status}
        kind={refusal.kind}
        shown={refusal.shown}
        providerName={providerName}
        signOutUrl={signOutUrl?.href ?? null}
        passwords={sso!.settings.localPasswords}
      />,
      refusal.status,
    );
  }

  admin.get("/login/sso", async (c) => {
    let begun;
    try {
      begun = await sso.begin();
    } catch (error) {
      deps.logger?.event("warn", "OpenID Connect sign-in could not start", {
        error: describeProviderError(error).message,
      });
      return await refusedPage(c, {
        status: 502,
        kind: "unreachable",
        shown: `${providerName} cannot be reached just now, so signing in through it is not ` +
          `possible. Try again in a while${
            sso.settings.localPasswords ? " or sign in with a password" : ""
          }.`,
      });
    }
    setCookie(c, STATE_COOKIE, begun.state, {
      path: STATE_COOKIE_PATH,
      httpOnly: true,
      sameSite: "Lax",
      secure: config.https,
      maxAge: 600,
    });
    return c.redirect(begun.url.href, 303);
  });

  admin.get(SSO_CALLBACK_PATH, async (c) => {
    // The URL the provider sent the browser to, as registered (a proxy may have changed the host).
    const currentUrl = new URL(`${config.baseUrl}/admin${SSO_CALLBACK_PATH}`);
    currentUrl.search = new URL(c.req.url).search;
    const browserState = getCookie(c, STATE_COOKIE);
    deleteCookie(c, STATE_COOKIE, { path: STATE_COOKIE_PATH, secure: config.https });
    const result = await sso.finish(currentUrl, browserState);
    if (!result.ok) {
      deps.logger?.event("warn", "OpenID Connect sign-in refused", {
        status: result.status,
        identity: result.identity,
        reason: result.message,
      });
      await audit(c, deps, {
        action: "auth.sign_in_refused",
        target: result.identity === undefined ? "-" : accountTarget(result.identity),
        details:
          `OpenID Connect provider ${providerName} (${sso.settings.issuer}): ${result.message}`,
        actor: result.identity ?? "-",
      });
      return await refusedPage(c, { ...result, shown: ssoSentence(result.said, sso.settings) });
    }
    await startSession(c, deps, { sso, signedIn: result });
    return c.redirect("/admin", 303);
  });
}

/** The admin session of a sign-in through the provider, and its audit entry. */
async function startSession(
  c: Context<AdminEnv>,
  deps: RouteDeps,
  { sso, signedIn }: { sso: SsoService; signedIn: SsoSignedIn },
): Promise<void> {
  const { config } = deps;
  const store = c.var.store;
  const previous = getSessionCookie(c);
  if (previous !== undefined) await deleteAdminSession(store, previous);
  const { id } = await createAdminSession(
    store,
    { username: signedIn.username, address: addressOf(c, deps), sso: signedIn.sessionPart },
    { policy: sessionPolicy(deps) },
  );
  setSessionCookie(c, config, id);
  clearLoginCsrfCookie(c, config);
  const change = signedIn.created
    ? `account created as ${signedIn.role}`
    : signedIn.before !== undefined && signedIn.before !== signedIn.role
    ? `role ${signedIn.before} -> ${signedIn.role}`
    : `role ${signedIn.role}`;
  await audit(c, deps, {
    action: "auth.sign_in",
    target: accountTarget(signedIn.username),
    details: `through OpenID Connect provider ${sso.settings.providerName} ` +
      `(${sso.settings.issuer}), subject "${signedIn.subject}", ${change}`,
    actor: signedIn.username,
  });
}

/**
 * A session signed in through the provider has its groups read again once its check interval
 * has passed (at its next request); a session whose groups no longer give a role, or that the
 * provider no longer confirms, ends there. Sessions with a local password pass unchecked.
 */
export function requireSsoCheck(deps: RouteDeps): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const sso = deps.sso;
    if (sso === undefined) return await next();
    const sessionId = c.get("sessionId");
    const session = c.get("session");
    const outcome = await sso.check({ id: sessionId, session }, { policy: sessionPolicy(deps) });
    if (!outcome.ended) {
      c.set("session", outcome.session);
      return await next();
    }
    const { username } = session;
    await deleteAdminSession(c.var.store, sessionId, username);
    clearSessionCookie(c, deps.config);
    await audit(c, deps, {
      action: "auth.session_ended",
      target: accountTarget(username),
      details: `OpenID Connect provider ${sso.settings.providerName}: ${outcome.reason}`,
      actor: username,
    });
    return redirectWithFlash(c, deps, {
      location: "/admin/login",
      kind: "error",
      text: `You were signed out: ${ssoSentence(outcome.said, sso.settings)}`,
    });
  };
}
