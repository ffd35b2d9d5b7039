/**
 * Sign-in to the admin UI through an OpenID Connect provider, roles from its groups
 * (docs/sso.md). The admin surface routes to it: `begin` sends the browser to the provider,
 * `finish` checks the answer, makes or updates the account and gives the provider's side of the
 * admin session to start, `check` reads a signed-in session's groups again once its check interval
 * has passed, `signOut` finds the provider's end-session URL. The provider's side lives in the
 * admin session's record (src/accounts/sessions.ts).
 */
import type { OidcConfig } from "../lib/config.ts";
import { randomToken } from "../lib/secrets.ts";
import type { AdminRole } from "../accounts/admin_users.ts";
import {
  type AdminSession,
  claimSsoCheck,
  type SessionPolicy,
  type SsoSessionPart,
  updateSsoSessionTokens,
} from "../accounts/sessions.ts";
import { createSsoPending, signInSsoAccount, takeSsoPending } from "./records.ts";
import { groupsOf, roleForGroups, usernameOf } from "./claims.ts";
import {
  type Claims,
  createProviderClient,
  describeProviderError,
  type ProviderFetch,
  type ProviderTokens,
} from "./provider.ts";
import type { Store } from "../kv/store.ts";

export { describeProviderError, type ProviderFetch } from "./provider.ts";

/** A sign-in that got through: who, with which role, and the session's provider side. */
export interface SsoSignedIn {
  ok: true;
  username: string;
  role: AdminRole;
  /** The role the account had before this sign-in (absent for a new account). */
  before?: AdminRole;
  created: boolean;
  subject: string;
  groups: string[];
  /** The provider's side of the admin session this sign-in starts (`createAdminSession`). */
  sessionPart: SsoSessionPart;
}

/**
 * Why a sign-in did not get through: `refused` (the provider knows the person, this service gives
 * them no account), `restart` (the sign-in itself was broken off or is stale: start again),
 * `failed` (the provider's answer failed a check or was an error), `unreachable`.
 */
export type SsoRefusalKind = "refused" | "restart" | "failed" | "unreachable";

/**
 * Why a sign-in was refused or a session ended, with what the sentence the person reads needs;
 * the admin UI words it (admin/sso_sentences.ts).
 */
export type SsoWhy =
  | { why: "no_username" }
  | { why: "no_role"; username: string; groups: string[] }
  | { why: "local_account"; username: string }
  | { why: "other_identity"; username: string }
  | { why: "last_admin"; username: string; role: AdminRole }
  | { why: "foreign_answer" }
  | { why: "used_up" }
  | { why: "not_confirmed" }
  | { why: "unreachable" }
  | { why: "groups_unconfirmed" }
  | { why: "other_user" }
  | { why: "no_refresh_token" }
  | { why: "renamed" };

/**
 * A refused sign-in: the status, why (`said`: the admin UI tells the person in plain words), the
 * details for operators (`message`: the log and the audit entry), and who it was if known.
 */
export interface SsoRefused {
  ok: false;
  status: 400 | 403 | 502;
  kind: SsoRefusalKind;
  said: SsoWhy;
  message: string;
  /** The ID token of a sign-in the provider completed (a hint for signing out there). */
  idToken?: string;
  /** The user name or subject, when the provider's answer got that far. */
  identity?: string;
}

/**
 * A session check: it goes on (with its record as it now stands), or it ended, why (for the audit
 * log) and what the person is told.
 */
export type SsoOutcome =
  | { ended: false; session: AdminSession }
  | { ended: true; reason: string; said: SsoWhy };

/** A signed-in admin session: the id its browser holds and its record. */
export interface SignedInSession {
  id: string;
  session: AdminSession;
}

export interface SsoService {
  settings: OidcConfig;
  /** Discovery at start: a provider that cannot be reached is reported and tried again. */
  start(report: (message: string) => void): void;
  stop(): void;
  /** A new sign-in: the provider's URL to send the browser to, and the `state` to bind to it. */
  begin(): Promise<{ url: URL; state: string }>;
  /** Checks the provider's answer at `currentUrl` against the sign-in this browser began. */
  finish(currentUrl: URL, browserState: string | undefined): Promise<SsoSignedIn | SsoRefused>;
  /**
   * Reads the session's groups again when its check interval has passed (not for sessions
   * signed in with a password), under the session policy its record is kept by.
   */
  check(
    signedIn: SignedInSession,
    options: { policy: SessionPolicy; nowMs?: number },
  ): Promise<SsoOutcome>;
  /**
   * The provider's end-session URL for the session, when it was signed in through the provider
   * and that offers one; its provider side goes with the admin session (`deleteAdminSession`).
   */
  signOut(session: AdminSession, postLogoutRedirectUri: string): Promise<URL | null>;
  /**
   * The provider's end-session URL for a browser that has no session here (after a refusal, so
   * that another person can sign in there), or null when the provider has none or cannot be
   * reached.
   */
  endSessionUrl(idToken: string | undefined, postLogoutRedirectUri: string): Promise<URL | null>;
}

export interface SsoOptions {
  store: Store;
  settings: OidcConfig;
  /** The callback URL registered at the provider. */
  redirectUri: string;
  /** The fetch every request to the provider goes through (tests pass a tampering one). */
  fetch?: ProviderFetch;
}

export function createSso({ store, settings, redirectUri, fetch }: SsoOptions): SsoService {
  const provider = createProviderClient(settings, { redirectUri, fetch });
  const issuer = settings.issuer;

  /** The account's role from the claims, or why there is none. */
  async function account(
    claims: Claims,
    subject: string,
  ): Promise<Omit<SsoSignedIn, "sessionPart"> | SsoRefused> {
    const username = usernameOf(claims, settings.usernameClaim);
    if (username === null) {
      return refused(403, {
        kind: "refused",
        identity: subject,
        said: { why: "no_username" },
        message: `The provider's "${settings.usernameClaim}" claim (set by ` +
          `APP_OIDC_USERNAME_CLAIM) is missing or not a user name of 1 to 64 letters, digits, ` +
          `. _ @ and -, so no account can be named after it.`,
      });
    }
    const groups = groupsOf(claims, settings.groupsClaim);
    const role = roleForGroups(groups, settings.roleGroups);
    if (role === null) {
      const groupsSaid = groups.length === 0
        ? `no "${settings.groupsClaim}" claim came with your sign-in`
        : `your groups (${groups.slice(0, 20).join(", ")}) are none of them`;
      return refused(403, {
        kind: "refused",
        identity: username,
        said: { why: "no_role", username, groups },
        message: `Your account "${username}" at ${settings.providerName} is in no group that ` +
          `gives a role here: ${groupsSaid}. Ask an admin to add you to one of the groups set by ` +
          `APP_OIDC_ADMIN_GROUPS, APP_OIDC_PUBLISHER_GROUPS or APP_OIDC_VIEWER_GROUPS.`,
      });
    }
    const result = await signInSsoAccount(store, {
      username,
      issuer,
      subject,
      provider: settings.providerName,
      role,
      groups,
    });
    switch (result.outcome) {
      case "local_account":
        return refused(403, {
          kind: "refused",
          identity: username,
          said: { why: "local_account", username },
          message: `"${username}" is a local account with a password here, so it cannot be ` +
            `signed in to through ${settings.providerName}. Ask an admin to rename or remove it.`,
        });
      case "other_identity":
        return refused(403, {
          kind: "refused",
          identity: username,
          said: { why: "other_identity", username },
          message: `The account "${username}" belongs to another identity of a provider.`,
        });
      case "last_admin":
        return refused(403, {
          kind: "refused",
          identity: username,
          said: { why: "last_admin", username, role },
          message: `Your groups make you a ${role}, but "${username}" is the last admin ` +
            `account: make another account an admin first.`,
        });
    }
    return {
      ok: true,
      username,
      role,
      before: result.before,
      created: result.outcome === "created",
      subject,
      groups,
    };
  }

  /** The ID token's claims and the userinfo endpoint's, for the ID token's subject. */
  async function claimsOf(tokens: ProviderTokens, subject: string): Promise<Claims> {
    const fromUserInfo = await provider.userInfo(tokens.accessToken, subject);
    return { ...tokens.idClaims, ...fromUserInfo };
  }

  return {
    settings,
    start(report) {
      provider.startDiscovery((error, retryInSeconds) => {
        report(
          `OpenID Connect provider ${issuer} not reachable at start ` +
            `(${describeProviderError(error).message}); trying again in ${retryInSeconds} s`,
        );
      });
    },
    stop: () => provider.stop(),

    async begin() {
      const state = randomToken();
      const nonce = randomToken();
      const codeVerifier = randomToken(48);
      const url = await provider.authorizationUrl({ state, nonce, codeVerifier });
      await createSsoPending(store, state, { code_verifier: codeVerifier, nonce });
      return { url, state };
    },

    async finish(currentUrl, browserState) {
      const state = currentUrl.searchParams.get("state");
      if (state === null || browserState === undefined || state !== browserState) {
        return refused(400, {
          kind: "restart",
          said: { why: "foreign_answer" },
          message: "The provider's answer does not belong to a sign-in this browser began " +
            "(its state does not match).",
        });
      }
      const pending = await takeSsoPending(store, state);
      if (pending === null) {
        return refused(400, {
          kind: "restart",
          said: { why: "used_up" },
          message: "The sign-in's state is used up or expired (a replayed or late answer).",
        });
      }
      let tokens: ProviderTokens;
      let claims: Claims;
      try {
        tokens = await provider.exchangeCode(currentUrl, {
          state,
          nonce: pending.nonce,
          codeVerifier: pending.code_verifier,
        });
        const subject = String(tokens.idClaims?.sub);
        claims = await claimsOf(tokens, subject);
      } catch (error) {
        const { reachable, message } = describeProviderError(error);
        return refused(reachable ? 403 : 502, {
          kind: reachable ? "failed" : "unreachable",
          said: { why: reachable ? "not_confirmed" : "unreachable" },
          message: `Signing in through ${settings.providerName} failed: ${message}.`,
        });
      }
      const signedIn = await account(claims, String(tokens.idClaims?.sub));
      if (!signedIn.ok) {
        return tokens.idToken === undefined ? signedIn : { ...signedIn, idToken: tokens.idToken };
      }
      const sessionPart: SsoSessionPart = {
        subject: signedIn.subject,
        id_token: tokens.idToken ?? "",
        ...(tokens.refreshToken === undefined ? {} : { refresh_token: tokens.refreshToken }),
        access_token: tokens.accessToken,
        ...(tokens.accessExpiresAt === undefined
          ? {}
          : { access_expires_at: tokens.accessExpiresAt }),
        checked_at: Date.now(),
      };
      return { ...signedIn, sessionPart };
    },

    async check({ id, session: signedIn }, { policy, nowMs = Date.now() }) {
      const intervalMs = settings.checkIntervalSeconds * 1000;
      // The request's own read of the record says whether a check may be due at all.
      if (signedIn.sso === null || nowMs - signedIn.sso.checked_at < intervalMs) {
        return { ended: false, session: signedIn };
      }
      const session = await claimSsoCheck(store, id, { policy, nowMs, intervalMs });
      if (session === null) return { ended: false, session: signedIn };
      const { username } = signedIn;
      let tokens: ProviderTokens;
      let claims: Claims;
      try {
        if (session.refresh_token !== undefined) {
          tokens = await provider.refresh(session.refresh_token);
          if (tokens.idClaims !== undefined && tokens.idClaims.sub !== session.subject) {
            return {
              ended: true,
              reason: "the provider answered for another user",
              said: { why: "other_user" },
            };
          }
        } else if (
          session.access_token !== undefined &&
          (session.access_expires_at === undefined || session.access_expires_at > nowMs)
        ) {
          tokens = {
            idToken: session.id_token,
            idClaims: undefined,
            accessToken: session.access_token,
            refreshToken: undefined,
            accessExpiresAt: session.access_expires_at,
          };
        } else {
          return {
            ended: true,
            reason: `your groups are due to be checked and ${settings.providerName} gave no ` +
              `refresh token: sign in again`,
            said: { why: "no_refresh_token" },
          };
        }
        claims = await claimsOf(tokens, session.subject);
      } catch (error) {
        return {
          ended: true,
          reason: `your groups could not be checked: ${describeProviderError(error).message}`,
          said: { why: "groups_unconfirmed" },
        };
      }
      // The ID token of a refresh may leave out the user name: the session's own stands.
      const checked = await account(
        { [settings.usernameClaim]: username, ...claims },
        session.subject,
      );
      if (!checked.ok) return { ended: true, reason: checked.message, said: checked.said };
      if (checked.username !== username) {
        return {
          ended: true,
          reason: "the provider now names you differently: sign in again",
          said: { why: "renamed" },
        };
      }
      const updated = await updateSsoSessionTokens(store, id, {
        tokens: {
          id_token: tokens.idToken ?? session.id_token,
          refresh_token: tokens.refreshToken ?? session.refresh_token,
          access_token: tokens.accessToken,
          access_expires_at: tokens.accessExpiresAt,
        },
        policy,
        nowMs,
      });
      return { ended: false, session: updated ?? signedIn };
    },

    async endSessionUrl(idToken, postLogoutRedirectUri) {
      try {
        return await provider.endSessionUrl(idToken, postLogoutRedirectUri);
      } catch {
        return null;
      }
    },

    async signOut(session, postLogoutRedirectUri) {
      if (!session.sso?.id_token) return null;
      try {
        return await provider.endSessionUrl(session.sso.id_token, postLogoutRedirectUri);
      } catch {
        // The provider cannot be reached: the local session ends all the same.
        return null;
      }
    },
  };
}

function refused(
  status: SsoRefused["status"],
  { kind, said, message, identity }: Omit<SsoRefused, "ok" | "status">,
): SsoRefused {
  return {
    ok: false,
    status,
    kind,
    said,
    message,
    ...(identity === undefined ? {} : { identity }),
  };
}
