/**
 * The public key set (docs/signing.md "The key set") at a fixed path outside
 * /api/v1: every signing key's id, public key, status and dates. With signing
 * on it is signed like an API answer, by every active key, so a client that
 * pinned an older set accepts a rotation through it.
 */
import type { Context } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { API_ERRORS } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import {
  type ApiResponder,
  createApiResponder,
  PROTECTED_HEADERS,
} from "../http/response_headers.ts";
import { getSigningRoot, type SigningKey } from "../signing/signing_keys.ts";

const encoder = new TextEncoder();

/** The key set document of `keys`. */
export function keySetBody(keys: readonly SigningKey[]): Uint8Array<ArrayBuffer> {
  return encoder.encode(JSON.stringify({
    keys: keys.map((key) => ({
      kid: key.kid,
      alg: key.alg,
      public_key: key.public_key,
      status: key.status,
      created_at: key.created_at,
      activated_at: key.activated_at,
      retired_at: key.retired_at,
    })),
  }));
}

export function keySetHandler(deps: ServiceDeps): (c: Context<AppEnv>) => Promise<Response> {
  const { signer } = deps;
  const respond = keySetResponder(deps);
  const bodies = new WeakMap<readonly SigningKey[], Uint8Array<ArrayBuffer>>();
  return async (c) => {
    await signer.ready();
    const keys = signer.keys();
    let body = bodies.get(keys);
    if (body === undefined) bodies.set(keys, body = keySetBody(keys));
    return respond.ok(c, body);
  };
}

/**
 * The offline root's document (docs/signing.md "Offline root") as an admin
 * uploaded it, or 404 when there is none. Read from KV at each request: only
 * clients pinned to a root ask, once per run.
 */
export function keySetRootHandler(deps: ServiceDeps): (c: Context<AppEnv>) => Promise<Response> {
  const respond = keySetResponder(deps);
  // The body of the document last served: while it stays, so do its bytes and their signature.
  let last: { text: string; body: Uint8Array<ArrayBuffer> } | null = null;
  return async (c) => {
    const root = await getSigningRoot(deps.store);
    if (root === null) return jsonResponse({ error: API_ERRORS.resourceNotFound }, 404);
    await deps.signer.ready();
    const text = JSON.stringify({ payload: root.payload, signatures: root.signatures });
    if (last?.text !== text) last = { text, body: encoder.encode(text) };
    return respond.ok(c, last.body);
  };
}

/**
 * JSON answers outside /api/v1, protected and (with signing on) signed like
 * one, the signature reused like an API answer's: these paths need no key,
 * so a flood of them must not cost an Ed25519 signature each. The same for
 * every caller, so without `Vary: Authorization`.
 */
function keySetResponder({ responseHeaders, signer }: ServiceDeps): ApiResponder {
  return createApiResponder({
    security: responseHeaders.security,
    protected: PROTECTED_HEADERS.filter(([name]) => name !== "vary"),
  }, signer);
}
