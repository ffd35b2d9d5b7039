/** Sign-in, sign-out and password change. */
import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, TOKEN_PATTERN } from "../../src/lib/limits.ts";
import { randomToken } from "../../src/lib/secrets.ts";
import type { AdminUser } from "../../src/accounts/admin_users.ts";
import type {
  LoginSubject,
  LoginThrottle,
  ThrottledCheck,
} from "../../src/accounts/login_throttle.ts";
import {
  createAdminSession,
  deleteAdminSession,
  deleteAdminSessionsOfUser,
  getAdminSession,
} from "../../src/accounts/sessions.ts";
import { accountTarget, authenticate, changePassword, signInSubject } from "../accounts.ts";
import { audit, pageContext, redirectWithFlash } from "../context.ts";
import {
  clearLoginCsrfCookie,
  clearSessionCookie,
  getLoginCsrfCookie,
  getSessionCookie,
  setLoginCsrfCookie,
  setSessionCookie,
} from "../cookies.ts";
import { field, readForm } from "../forms.ts";
import { sessionPolicy, tokenMatches } from "../guards.ts";
import { addressOf } from "../../src/http/client_address.ts";
import type { AdminEnv, FormError, RouteDeps } from "../types.ts";
import { LoginPage } from "../views/login.tsx";
import { PasswordPage } from "../views/password.tsx";
import type { Store } from "../../src/kv/store.ts";
import { mayUsePassword, signedOutAtProvider, signInChoices } from "./sso.tsx";

export const INVALID_CREDENTIALS = "invalid username or password";

/**
 * Checks a password under the sign-in throttle (src/accounts/login_throttle.ts):
 * a refusal says why, with the seconds to wait.
 */
function checkPasswordThrottled(
  { store, throttle }: { store: Store; throttle: LoginThrottle },
  subject: LoginSubject,
  password: string,
): Promise<ThrottledCheck<AdminUser>> {
  return throttle.check(subject, () => authenticate(store, subject.username, password));
}

/** What a refused sign-in tells the person, and the audit log. */
function refusalMessage(checked: { refused: "locked" | "busy"; retryAfterSeconds: number }) {
  return checked.refused === "locked"
    ? `Too many failed sign-ins. Try again in ${checked.retryAfterSeconds} seconds.`
    : "Too many sign-ins at once from this address. Try again in a moment.";
}

/** The routes that work without a session: the sign-in form and its POST. */
export function addLoginRoutes(
  admin: Hono<AdminEnv>,
  deps: RouteDeps,
  throttle: LoginThrottle,
): void {
  const { config } = deps;
  const policy = sessionPolicy(deps);

  /** The pre-session CSRF token: kept while the browser has a valid one, so tabs agree. */
  function loginToken(c: Parameters<typeof getLoginCsrfCookie>[0]): string {
    const current = getLoginCsrfCookie(c);
    const token = current && TOKEN_PATTERN.test(current) ? current : randomToken();
    setLoginCsrfCookie(c, config, token);
    return token;
  }

  admin.get("/login", async (c) => {
    if (await getAdminSession(c.var.store, getSessionCookie(c), { policy })) {
      return c.redirect("/admin", 303);
    }
    // `?break-glass`: the password form when local passwords are off (docs/sso.md).
    const choices = signInChoices(deps, { breakGlass: c.req.query("break-glass") !== undefined });
    return c.html(
      <LoginPage ctx={pageContext(c, deps)} csrfToken={loginToken(c)} choices={choices} />,
    );
  });

  admin.post("/login", bodyLimit({ maxSize: 64 * 1024 }), async (c) => {
    const form = await readForm(c);
    const username = field(form, "username").trim();
    const password = field(form, "password");
    const ctx = pageContext(c, deps);
    const choices = signInChoices(deps, { breakGlass: true });
    /** The sign-in form again, with the name as typed and why it was refused. */
    const showAgain = (csrfToken: string, error: string, status: 401 | 403 | 429) =>
      c.html(
        <LoginPage
          ctx={ctx}
          choices={choices}
          csrfToken={csrfToken}
          username={username}
          error={error}
        />,
        status,
      );
    const cookieToken = getLoginCsrfCookie(c);
    if (cookieToken === undefined || !tokenMatches(cookieToken, field(form, "csrf_token"))) {
      const token = randomToken();
      setLoginCsrfCookie(c, config, token);
      return showAgain(token, "The sign-in form had expired. Please sign in again.", 403);
    }

    const address = addressOf(c, deps);
    // With local passwords off, only the break-glass accounts' passwords are checked (docs/sso.md).
    const allowed = mayUsePassword(deps, username);
    const checked: ThrottledCheck<AdminUser> = allowed
      ? await checkPasswordThrottled(
        { store: c.var.store, throttle },
        { username, address },
        password,
      )
      : { refused: false, found: null };
    if (checked.refused) {
      await audit(c, deps, {
        action: "auth.sign_in_refused",
        ...await signInSubject(c.var.store, username),
        details: checked.refused === "locked"
          ? `locked for ${checked.retryAfterSeconds} s after failures`
          : "too many sign-ins at once",
      });
      c.header("retry-after", String(checked.retryAfterSeconds));
      return showAgain(cookieToken, refusalMessage(checked), 429);
    }

    const user = checked.found;
    if (user === null) {
      await audit(c, deps, {
        action: "auth.sign_in_failed",
        ...await signInSubject(c.var.store, username),
      });
      return showAgain(cookieToken, INVALID_CREDENTIALS, 401);
    }

    const previous = getSessionCookie(c);
    if (previous !== undefined) await deleteAdminSession(c.var.store, previous);
    const { id } = await createAdminSession(c.var.store, { username: user.username, address }, {
      policy,
    });
    setSessionCookie(c, config, id);
    clearLoginCsrfCookie(c, config);
    await audit(c, deps, {
      action: "auth.sign_in",
      target: accountTarget(user.username),
      actor: user.username,
    });
    return c.redirect("/admin", 303);
  });
}

/** Routes behind the session and CSRF gates. */
export function addAccountRoutes(
  admin: Hono<AdminEnv>,
  deps: RouteDeps,
  throttle: LoginThrottle,
): void {
  const { config } = deps;

  admin.post("/logout", async (c) => {
    const session = c.get("session");
    // A session signed in through a provider ends there too, where it offers end-session.
    const endAtProvider = await deps.sso?.signOut(session, `${config.baseUrl}/admin/login`);
    await deleteAdminSession(c.var.store, c.get("sessionId"), session.username);
    clearSessionCookie(c, config);
    await audit(c, deps, {
      action: "auth.sign_out",
      target: accountTarget(session.username),
      ...(endAtProvider ? { details: `and at ${deps.sso?.settings.providerName}` } : {}),
    });
    const signedOut = { kind: "success", text: "You are signed out." } as const;
    if (endAtProvider) return signedOutAtProvider(c, deps, { flash: signedOut, endAtProvider });
    return redirectWithFlash(c, deps, { location: "/admin/login", ...signedOut });
  });

  admin.get("/account/password", (c) => c.html(<PasswordPage ctx={pageContext(c, deps)} />));

  admin.post("/account/password", async (c) => {
    const form = c.get("form");
    const { username } = c.get("session");
    const address = addressOf(c, deps);
    const showError = (error: FormError, status: 400 | 429 = 400) =>
      c.html(<PasswordPage ctx={pageContext(c, deps)} error={error} />, status);

    const checked = await checkPasswordThrottled(
      { store: c.var.store, throttle },
      { username, address },
      field(form, "current_password"),
    );
    if (checked.refused) {
      c.header("retry-after", String(checked.retryAfterSeconds));
      return showError({
        field: "current_password",
        message: checked.refused === "locked"
          ? `Too many wrong passwords. Try again in ${checked.retryAfterSeconds} seconds.`
          : refusalMessage(checked),
      }, 429);
    }
    const newPassword = field(form, "new_password");
    if (checked.found === null) {
      await audit(c, deps, {
        action: "auth.password_change_failed",
        target: accountTarget(username),
        details: "wrong current password",
      });
      return showError({ field: "current_password", message: "the current password is wrong" });
    }
    if (newPassword.length < PASSWORD_MIN_LENGTH || newPassword.length > PASSWORD_MAX_LENGTH) {
      return showError({
        field: "new_password",
        message:
          `the new password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`,
      });
    }
    if (newPassword !== field(form, "confirm_password")) {
      return showError({ field: "confirm_password", message: "the two new passwords differ" });
    }
    await changePassword(c.var.store, username, newPassword);
    const ended = await deleteAdminSessionsOfUser(c.var.store, username, c.get("sessionId"));
    await audit(c, deps, {
      action: "auth.password_changed",
      target: accountTarget(username),
      details: `${ended} other sessions ended`,
    });
    return redirectWithFlash(c, deps, {
      location: "/admin",
      kind: "success",
      text: "Your password was changed. Your other sessions were signed out.",
    });
  });
}
