/**
 * A real OpenID Connect provider for the SSO tests (docs/sso.md): `oidc-provider` (a certified
 * implementation) in this process, on a free loopback port, with its development login form
 * (any login, any password), consent granted without asking, refresh tokens, and a `groups` claim
 * from `users`, which tests change. `rotateKey` swaps in a provider that signs with a new key
 * (the old one still published); `signIdToken` signs a token with the current key, for tests that
 * hand the service a forged one. Runs under Deno's Node compatibility (node:http, Koa).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import Provider from "oidc-provider";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import type { Config, OidcConfig } from "../src/lib/config.ts";

export const CLIENT_ID = "uds-admin";
export const CLIENT_SECRET = "a client secret of the test provider";

/** What `loadExistingGrant` uses of the provider's request context (it ships no types). */
interface GrantContext {
  oidc: {
    session?: { accountId?: string; grantIdFor(clientId: string, grantId?: string): string };
    client?: { clientId: string };
    provider: {
      Grant: {
        new (input: { clientId: string; accountId: string }): Grant;
        find(id: string): Promise<Grant | undefined>;
      };
    };
  };
}

interface Grant {
  jti: string;
  addOIDCScope(scope: string): void;
  save(): Promise<string>;
}

interface SigningKey {
  kid: string;
  privateJwk: JWK;
  privateKey: CryptoKey;
}

export interface TestProvider extends AsyncDisposable {
  issuer: string;
  /** Each user's groups, read at every sign-in, refresh and userinfo call. */
  users: Map<string, string[]>;
  /** The requests the provider served, by path (e.g. "/jwks"). */
  requests: string[];
  /** A new signing key: the provider signs with it from now on and publishes both. */
  rotateKey(): Promise<void>;
  /** A JWT with `claims`, signed with the provider's current key (RS256). */
  signIdToken(claims: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

async function newSigningKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const kid = crypto.randomUUID();
  const privateJwk = { ...await exportJWK(privateKey), kid, alg: "RS256", use: "sig" };
  return { kid, privateJwk, privateKey: privateKey as CryptoKey };
}

/**
 * Starts the provider for apps at `baseUrls` (their callback URLs are registered), issuing refresh
 * tokens unless `refreshTokens` is false.
 */
export async function startTestProvider(
  baseUrls: string[],
  { refreshTokens = true }: { refreshTokens?: boolean } = {},
): Promise<TestProvider> {
  const users = new Map<string, string[]>();
  const requests: string[] = [];
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    requests.push(new URL(req.url ?? "/", "http://x").pathname);
    handler!(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const issuer = `http://127.0.0.1:${port}`;
  const keys: SigningKey[] = [await newSigningKey()];

  function build(): Provider {
    // Its notes on the development-only parts (in-memory storage, the login form) are expected.
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (!String(args[0]).includes("development-only")) warn(...args);
    };
    try {
      return configured();
    } finally {
      console.warn = warn;
    }
  }

  function configured(): Provider {
    const provider = new Provider(issuer, {
      clients: [{
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: baseUrls.map((base) => `${base}/admin/login/sso/callback`),
        post_logout_redirect_uris: baseUrls.map((base) => `${base}/admin/login`),
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      }],
      jwks: { keys: keys.map((key) => key.privateJwk) },
      cookies: { keys: ["cookie key of the test provider"] },
      claims: {
        openid: ["sub"],
        profile: ["preferred_username", "name"],
        groups: ["groups"],
      },
      scopes: ["openid", "profile", "groups", "offline_access"],
      findAccount: (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: () => ({ sub: id, preferred_username: id, name: id, groups: users.get(id) ?? [] }),
      }),
      issueRefreshToken: () => refreshTokens,
      // A first-party client: every requested scope is granted without a consent page.
      loadExistingGrant: async (ctx: GrantContext) => {
        const session = ctx.oidc.session!;
        const clientId = ctx.oidc.client!.clientId;
        const grantId = session.grantIdFor(clientId);
        if (grantId) {
          const grant = await ctx.oidc.provider.Grant.find(grantId);
          if (grant) return grant;
        }
        const grant = new ctx.oidc.provider.Grant({ clientId, accountId: session.accountId! });
        grant.addOIDCScope("openid profile groups offline_access");
        await grant.save();
        session.grantIdFor(clientId, grant.jti);
        return grant;
      },
      features: {
        devInteractions: { enabled: true },
        rpInitiatedLogout: {
          enabled: true,
          logoutSource: (ctx: { body: string }, form: string) => {
            ctx.body = `<!DOCTYPE html><title>Sign out</title>${form}<button autofocus ` +
              `type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>`;
          },
        },
      },
      pkce: { required: () => true },
      ttl: {
        AccessToken: 3600,
        IdToken: 3600,
        RefreshToken: 86_400,
        Session: 86_400,
        Interaction: 3600,
        Grant: 86_400,
      },
    });
    // The provider's own warnings and errors would fill the test output.
    provider.on(
      "server_error",
      (_ctx: unknown, error: unknown) => console.error("test provider error:", error),
    );
    return provider;
  }

  handler = build().callback();

  async function close(): Promise<void> {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  return {
    issuer,
    users,
    requests,
    async rotateKey() {
      keys.unshift(await newSigningKey());
      handler = build().callback();
    },
    async signIdToken(claims) {
      const key = keys[0];
      return await new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: key.kid })
        .sign(key.privateKey);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** The settings of an app signing in through `provider` (docs/sso.md). */
export function oidcSettings(
  provider: { issuer: string },
  overrides: Partial<OidcConfig> = {},
): Pick<Config, "oidc"> {
  return {
    oidc: {
      issuer: provider.issuer,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      scopes: "openid profile groups",
      usernameClaim: "preferred_username",
      groupsClaim: "groups",
      roleGroups: { admin: ["uds-admins"], publisher: ["uds-publishers"], viewer: ["uds-viewers"] },
      localPasswords: true,
      breakGlassUsers: ["admin"],
      checkIntervalSeconds: 300,
      providerName: "Test IdP",
      ...overrides,
    },
  };
}

/**
 * Signs in at the provider as `login` (its development login form), following its redirects
 * from `authorizationUrl` with a cookie jar; the URL it sends the browser back to.
 */
export async function signInAtProvider(authorizationUrl: string, login: string): Promise<URL> {
  const jar = new Map<string, string>();
  const send = async (url: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (jar.size > 0) headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair.indexOf("=");
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    await res.body?.cancel();
    return res;
  };
  let url = authorizationUrl;
  for (let step = 0; step < 10; step++) {
    const res = await send(url);
    const location = res.headers.get("location");
    if (location === null) throw new Error(`the provider answered ${res.status} at ${url}`);
    const next = new URL(location, url);
    if (!next.href.startsWith(new URL(authorizationUrl).origin)) return next;
    if (next.pathname.startsWith("/interaction/")) {
      const posted = await send(next.href, {
        method: "POST",
        body: new URLSearchParams({ prompt: "login", login, password: "any" }),
      });
      url = new URL(posted.headers.get("location")!, next).href;
      continue;
    }
    url = next.href;
  }
  throw new Error("the provider redirected too often");
}
