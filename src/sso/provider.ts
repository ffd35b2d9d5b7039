/**
 * The OpenID Connect provider as `openid-client` sees it (docs/sso.md): discovery from the issuer
 * URL (kept once found, retried in the background while the provider cannot be reached), the
 * authorization code flow with PKCE, `state` and `nonce`, and the ID token checks of the library
 * (issuer, audience, expiry, nonce, and its signature against the provider's JWKS).
 *
 * Each exchange with the provider uses a fresh `Configuration` from the discovered metadata, so the
 * JWKS is read at each sign-in and session check: a provider that rotates its signing key is
 * followed at once, however recently the old key set was read.
 */
import * as oidc from "openid-client";
import type { OidcConfig } from "../lib/config.ts";

export type Claims = Record<string, unknown>;
/** A fetch for every request to the provider: `(url, { method, headers, body, redirect, signal })`. */
export type ProviderFetch = oidc.CustomFetch;

/** What the token endpoint answered, the ID token's checks passed. */
export interface ProviderTokens {
  idToken: string | undefined;
  /** The ID token's claims (absent when a refresh answered without an ID token). */
  idClaims: Claims | undefined;
  accessToken: string;
  refreshToken: string | undefined;
  /** When the access token ends, in ms since the epoch. */
  accessExpiresAt: number | undefined;
}

export interface ProviderClient {
  /** Discovers now, and again every so often until it works, reporting each failure. */
  startDiscovery(report: (error: unknown, retryInSeconds: number) => void): void;
  stop(): void;
  authorizationUrl(
    checks: { state: string; nonce: string; codeVerifier: string },
  ): Promise<URL>;
  /** Trades the code of the provider's answer at `currentUrl`; throws what failed a check. */
  exchangeCode(
    currentUrl: URL,
    checks: { state: string; nonce: string; codeVerifier: string },
  ): Promise<ProviderTokens>;
  refresh(refreshToken: string): Promise<ProviderTokens>;
  /** The userinfo endpoint's claims, `{}` when the provider has none. */
  userInfo(accessToken: string, subject: string): Promise<Claims>;
  /**
   * The provider's end-session URL, or null when it offers none; without an ID token it names
   * this client only (the provider may then ask whether to sign out).
   */
  endSessionUrl(idToken: string | undefined, postLogoutRedirectUri: string): Promise<URL | null>;
}

/** How long one request to the provider may take. */
const TIMEOUT_SECONDS = 10;
const RETRY_MIN_SECONDS = 5;
const RETRY_MAX_SECONDS = 300;

export function createProviderClient(
  settings: OidcConfig,
  { redirectUri, fetch }: { redirectUri: string; fetch?: ProviderFetch },
): ProviderClient {
  const insecure = new URL(settings.issuer).protocol === "http:";
  const clientMetadata = settings.clientSecret === undefined
    ? undefined
    : { client_secret: settings.clientSecret };
  const clientAuth = settings.clientSecret === undefined ? oidc.None() : undefined;
  let found: oidc.ServerMetadata | undefined;
  let discovering: Promise<oidc.ServerMetadata> | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  function prepare(configuration: oidc.Configuration): void {
    if (insecure) oidc.allowInsecureRequests(configuration);
    oidc.enableNonRepudiationChecks(configuration);
    if (fetch !== undefined) configuration[oidc.customFetch] = fetch;
    configuration.timeout = TIMEOUT_SECONDS;
  }

  function discover(): Promise<oidc.ServerMetadata> {
    discovering ??= oidc.discovery(
      new URL(settings.issuer),
      settings.clientId,
      clientMetadata,
      clientAuth,
      {
        execute: insecure ? [oidc.allowInsecureRequests] : [],
        timeout: TIMEOUT_SECONDS,
        ...(fetch === undefined ? {} : { [oidc.customFetch]: fetch }),
      },
    ).then((configuration) => {
      found = configuration.serverMetadata();
      return found;
    }).finally(() => discovering = undefined);
    return discovering;
  }

  async function configuration(): Promise<oidc.Configuration> {
    const metadata = found ?? await discover();
    const made = new oidc.Configuration(metadata, settings.clientId, clientMetadata, clientAuth);
    prepare(made);
    return made;
  }

  function tokensOf(answer: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers) {
    const expiresIn = answer.expiresIn();
    return {
      idToken: answer.id_token,
      idClaims: answer.claims() as Claims | undefined,
      accessToken: answer.access_token,
      refreshToken: answer.refresh_token,
      accessExpiresAt: expiresIn === undefined ? undefined : Date.now() + expiresIn * 1000,
    };
  }

  return {
    startDiscovery(report) {
      let waitSeconds = RETRY_MIN_SECONDS;
      const attempt = () => {
        retryTimer = undefined;
        if (stopped || found !== undefined) return;
        discover().catch((error) => {
          if (stopped) return;
          report(error, waitSeconds);
          retryTimer = setTimeout(attempt, waitSeconds * 1000);
          waitSeconds = Math.min(waitSeconds * 2, RETRY_MAX_SECONDS);
        });
      };
      attempt();
    },

    stop() {
      stopped = true;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
    },

    async authorizationUrl({ state, nonce, codeVerifier }) {
      return oidc.buildAuthorizationUrl(await configuration(), {
        redirect_uri: redirectUri,
        scope: settings.scopes,
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: "S256",
        state,
        nonce,
      });
    },

    async exchangeCode(currentUrl, { state, nonce, codeVerifier }) {
      const answer = await oidc.authorizationCodeGrant(await configuration(), currentUrl, {
        pkceCodeVerifier: codeVerifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      }, { redirect_uri: redirectUri });
      return tokensOf(answer);
    },

    async refresh(refreshToken) {
      return tokensOf(await oidc.refreshTokenGrant(await configuration(), refreshToken));
    },

    async userInfo(accessToken, subject) {
      const made = await configuration();
      if (made.serverMetadata().userinfo_endpoint === undefined) return {};
      return await oidc.fetchUserInfo(made, accessToken, subject) as Claims;
    },

    async endSessionUrl(idToken, postLogoutRedirectUri) {
      const made = await configuration();
      if (made.serverMetadata().end_session_endpoint === undefined) return null;
      return oidc.buildEndSessionUrl(made, {
        ...(idToken === undefined ? {} : { id_token_hint: idToken }),
        post_logout_redirect_uri: postLogoutRedirectUri,
      });
    },
  };
}

/** What went wrong with the provider, in words for the refusal page and the log. */
export function describeProviderError(error: unknown): { reachable: boolean; message: string } {
  if (error instanceof oidc.AuthorizationResponseError || error instanceof oidc.ResponseBodyError) {
    const detail = error.error_description ? `: ${error.error_description}` : "";
    return { reachable: true, message: `the provider answered "${error.error}"${detail}` };
  }
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : "";
  const message = error instanceof Error ? error.message : String(error);
  const detail = cause !== "" && cause !== message ? `${message}: ${cause}` : message;
  if (
    error instanceof TypeError ||
    (error instanceof oidc.ClientError && /Timeout|Abort/.test(error.code ?? ""))
  ) {
    return { reachable: false, message: `the provider cannot be reached (${detail})` };
  }
  return { reachable: true, message: `the provider's answer failed a check (${detail})` };
}
