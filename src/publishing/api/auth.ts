/**
 * The publishing API's gate: `Authorization: Bearer <publish token>` (Hono's
 * bearer-auth), looked up by the hash of the token and judged by
 * src/credentials/tokens.ts. Every check runs under the same sign-in throttle
 * as passwords (src/accounts/login_throttle.ts), as one account named
 * `THROTTLE_SUBJECT` per client address: failed attempts lock the address
 * out for a while, a success from it releases its reservation.
 */
import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { ApiError } from "../../http/errors.ts";
import { jsonResponse } from "../../http/json.ts";
import {
  isClientKey,
  judgePublishToken,
  looksLikePublishToken,
  type TokenRefusal,
} from "../../credentials/tokens.ts";
import { recordAuditSafely, tokenActor } from "../../kv/audit.ts";
import type { LoginThrottle } from "../../accounts/login_throttle.ts";
import {
  getPublishTokenBySecret,
  type PublishToken,
  recordPublishTokenUse,
} from "../../credentials/publish_tokens.ts";
import { addressOf } from "../../http/client_address.ts";
import type { ServiceDeps } from "../../http/app_env.ts";
import type { PublishEnv } from "./types.ts";

/** The throttle's "user name" of publish tokens (admin user names cannot contain spaces). */
const THROTTLE_SUBJECT = "publish token";

const TOKEN_ERRORS = {
  missing: "missing bearer publish token",
  malformed: "malformed Authorization header: send Authorization: Bearer <publish token>",
  invalid: "invalid publish token",
  clientKey: "this is a client API key (uds_…): the publishing API takes a publish token (udp_…)",
  throttled: "too many failed publish token attempts from this address; try again later",
} as const;

export function publishTokenAuth(
  deps: ServiceDeps,
  throttle: LoginThrottle,
): MiddlewareHandler<PublishEnv> {
  const realm = `Bearer realm="${deps.config.serviceRealm}"`;
  const refusals = new WeakMap<Context, TokenRefusal>();
  return bearerAuth<PublishEnv>({
    realm: deps.config.serviceRealm,
    noAuthenticationHeader: {
      wwwAuthenticateHeader: realm,
      message: () => jsonResponse({ error: TOKEN_ERRORS.missing }, 401),
    },
    invalidAuthenticationHeader: {
      wwwAuthenticateHeader: `${realm}, error="invalid_request"`,
      message: () => jsonResponse({ error: TOKEN_ERRORS.malformed }, 400),
    },
    invalidToken: {
      wwwAuthenticateHeader: `${realm}, error="invalid_token"`,
      message: (c) =>
        jsonResponse({
          error: refusals.get(c) === "client_key" ? TOKEN_ERRORS.clientKey : TOKEN_ERRORS.invalid,
        }, 401),
    },
    verifyToken: async (secret, c) => {
      let refusal: TokenRefusal = "unknown";
      let judged: PublishToken | null = null;
      const address = addressOf(c, deps);
      const checked = await throttle.check({ username: THROTTLE_SUBJECT, address }, async () => {
        if (isClientKey(secret)) refusal = "client_key";
        if (!looksLikePublishToken(secret)) return null;
        judged = await getPublishTokenBySecret(deps.store, secret);
        const why = judgePublishToken(judged, Date.now());
        if (why === null) return judged;
        refusal = why;
        return null;
      });
      if (checked.refused) {
        throw new ApiError(429, TOKEN_ERRORS.throttled, {
          "retry-after": String(checked.retryAfterSeconds),
        });
      }
      if (checked.found === null) {
        refusals.set(c, refusal);
        const known = judged as PublishToken | null;
        if (known !== null) {
          // A known token that is disabled or expired: its owner wants to know who still uses it.
          await recordAuditSafely(deps.store, {
            actor: tokenActor(known),
            action: "publish_token.refused",
            target: `publish token ${known.id}`,
            details: `${refusal}; ${c.req.method} ${c.req.path}`,
            address,
          }, () => deps.metrics.recordKvError("admin"));
        }
        return false;
      }
      const token = checked.found;
      c.set("publishToken", token);
      recordPublishTokenUse(deps.store, token.id, new Date().toISOString()).catch((error) => {
        deps.metrics.recordKvError("admin");
        console.error("publish token use record failed:", error);
      });
      return true;
    },
  });
}
