/**
 * Sign-in to the admin UI through an OpenID Connect provider, roles from its groups
 * (docs/sso.md). The admin surface routes to it: `begin` sends the browser to the provider,
 * `finish` checks the answer and makes or updates the account, `check` reads a signed-in
 * session's groups again once its check interval has passed, `signOut` ends the provider's side.
 */
import type { OidcConfig } from "../lib/config.ts";
import { randomToken } from "../lib/secrets.ts";
import {
  type AdminRole,
  claimSsoCheck,
  createSsoPending,
  deleteSsoSession,
  getSsoSession,
  putSsoSession,
  signInSsoAccount,
  type SsoSession,
  takeSsoPending,
  updateSsoSessionTokens,
} from "../store/mod.ts";
import { groupsOf, roleForGroups, usernameOf } from "./claims.ts";
import {
  type Claims,
  createProviderClient,
  describeProviderError,
  type ProviderFetch,
  type ProviderTokens,
} from "./provider.ts";

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
  tokens: ProviderTokens;
}

/** A refused sign-in: the status and the sentence for the page, and who it was if known. */
export interface SsoRefused {
  ok: false;
  status: 400 | 403 | 502;
  message: string;
  /** The user name or subject, when the provider's answer got that far. */
  identity?: string;
}

export type SsoOutcome = { ended: false } | { ended: true; reason: string };

export interface SsoService {
  settings: OidcConfig;
  /** Discovery at start: a provider that cannot be reached is reported and tried again. */
  start(report: (message: string) => void): void;
  stop(): void;
  /** A new sign-in: the provider's URL to send the browser to, and the `state` to bind to it. */
  begin(): Promise<{ url: URL; state: string }>;
  /** Checks the provider's answer at `currentUrl` against the sign-in this browser began. */
  finish(currentUrl: URL, browserState: string | undefined): Promise<SsoSignedIn | SsoRefused>;
  /** Keeps the provider's side of the admin session `sessionId` made for `signedIn`. */
  remember(
    sessionId: string,
    { signedIn, nowMs, expiresAtMs }: { signedIn: SsoSignedIn; nowMs: number; expiresAtMs: number },
  ): Promise<void>;
  /** Reads the session's groups again when its check interval has passed (not for local sessions). */
  check(sessionId: string, nowMs?: number): Promise<SsoOutcome>;
  /** Forgets the session's provider side; the provider's end-session URL, when it has one. */
  signOut(sessionId: string, postLogoutRedirectUri: string): Promise<URL | null>;
}

export interface SsoOptions {
  kv: Deno.Kv;
  settings: OidcConfig;
  /** The callback URL registered at the provider. */
  redirectUri: string;
  /** The fetch every request to the provider goes through (tests pass a tampering one). */
  fetch?: ProviderFetch;
}

export function createSso({ kv, settings, redirectUri, fetch }: SsoOptions): SsoService {
  const provider = createProviderClient(settings, { redirectUri, fetch });
  const issuer = settings.issuer;

  /** The account's role from the claims, or why there is none. */
  async function account(
    claims: Claims,
    subject: string,
  ): Promise<Omit<SsoSignedIn, "tokens"> | SsoRefused> {
    const username = usernameOf(claims, settings.usernameClaim);
    if (username === null) {
      return refused(403, {
        identity: subject,
        message: `The provider's "${settings.usernameClaim}" claim (set by ` +
          `APP_OIDC_USERNAME_CLAIM) is missing or not a user name of 1 to 64 letters, digits, ` +
          `. _ @ and -, so no account can be named after it.`,
      });
    }
    const groups = groupsOf(claims, settings.groupsClaim);
    const role = roleForGroups(groups, settings.roleGroups);
    if (role === null) {
      const shown = groups.length === 0
        ? `no "${settings.groupsClaim}" claim came with your sign-in`
        : `your groups (${groups.slice(0, 20).join(", ")}) are none of them`;
      return refused(403, {
        identity: username,
        message: `Your account "${username}" at ${settings.providerName} is in no group that ` +
          `gives a role here: ${shown}. Ask an admin to add you to one of the groups set by ` +
          `APP_OIDC_ADMIN_GROUPS, APP_OIDC_PUBLISHER_GROUPS or APP_OIDC_VIEWER_GROUPS.`,
      });
    }
    const result = await signInSsoAccount(kv, {
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
          identity: username,
          message: `"${username}" is a local account with a password here, so it cannot be ` +
            `signed in to through ${settings.providerName}. Ask an admin to rename or remove it.`,
        });
      case "other_identity":
        return refused(403, {
          identity: username,
          message: `The account "${username}" belongs to another identity of a provider.`,
        });
      case "last_admin":
        return refused(403, {
          identity: username,
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
      await createSsoPending(kv, state, { code_verifier: codeVerifier, nonce });
      return { url, state };
    },

    async finish(currentUrl, browserState) {
      const state = currentUrl.searchParams.get("state");
      if (state === null || browserState === undefined || state !== browserState) {
        return refused(400, {
          message: "The provider's answer does not belong to a sign-in this browser began " +
            "(its state does not match). Start the sign-in again.",
        });
      }
      const pending = await takeSsoPending(kv, state);
      if (pending === null) {
        return refused(400, {
          message: "This sign-in was already completed or has expired. Start it again.",
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
          message: `Signing in through ${settings.providerName} failed: ${message}.`,
        });
      }
      const signedIn = await account(claims, String(tokens.idClaims?.sub));
      return signedIn.ok ? { ...signedIn, tokens } : signedIn;
    },

    async remember(sessionId, { signedIn, nowMs, expiresAtMs }) {
      const { tokens } = signedIn;
      const session: SsoSession = {
        issuer,
        subject: signedIn.subject,
        username: signedIn.username,
        id_token: tokens.idToken ?? "",
        ...(tokens.refreshToken === undefined ? {} : { refresh_token: tokens.refreshToken }),
        access_token: tokens.accessToken,
        ...(tokens.accessExpiresAt === undefined
          ? {}
          : { access_expires_at: tokens.accessExpiresAt }),
        checked_at: nowMs,
        expires_at: expiresAtMs,
      };
      await putSsoSession(kv, sessionId, session);
    },

    async check(sessionId, nowMs = Date.now()) {
      const claim = await claimSsoCheck(kv, sessionId, {
        nowMs,
        intervalMs: settings.checkIntervalSeconds * 1000,
      });
      if (claim.status !== "due") return { ended: false };
      const { session } = claim;
      let tokens: ProviderTokens;
      let claims: Claims;
      try {
        if (session.refresh_token !== undefined) {
          tokens = await provider.refresh(session.refresh_token);
          if (tokens.idClaims !== undefined && tokens.idClaims.sub !== session.subject) {
            return { ended: true, reason: "the provider answered for another user" };
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
          };
        }
        claims = await claimsOf(tokens, session.subject);
      } catch (error) {
        return {
          ended: true,
          reason: `your groups could not be checked: ${describeProviderError(error).message}`,
        };
      }
      // The ID token of a refresh may leave out the user name: the session's own stands.
      const checked = await account(
        { [settings.usernameClaim]: session.username, ...claims },
        session.subject,
      );
      if (!checked.ok) return { ended: true, reason: checked.message };
      if (checked.username !== session.username) {
        return { ended: true, reason: "the provider now names you differently: sign in again" };
      }
      await updateSsoSessionTokens(kv, sessionId, {
        id_token: tokens.idToken ?? session.id_token,
        refresh_token: tokens.refreshToken ?? session.refresh_token,
        access_token: tokens.accessToken,
        access_expires_at: tokens.accessExpiresAt,
      });
      return { ended: false };
    },

    async signOut(sessionId, postLogoutRedirectUri) {
      const session = await getSsoSession(kv, sessionId);
      if (session === null) return null;
      await deleteSsoSession(kv, sessionId);
      if (session.id_token === "") return null;
      try {
        return await provider.endSessionUrl(session.id_token, postLogoutRedirectUri);
      } catch {
        // The provider cannot be reached: the local session ends all the same.
        return null;
      }
    },
  };
}

function refused(
  status: SsoRefused["status"],
  { message, identity }: { message: string; identity?: string },
): SsoRefused {
  return { ok: false, status, message, ...(identity === undefined ? {} : { identity }) };
}
