/**
 * The public key set (docs/signing.md "The key set") at a fixed path outside
 * /api/v1: every signing key's id, public key, status and dates. With signing
 * on it is signed like an API answer, by every active key, so a client that
 * pinned an older set accepts a rotation through it.
 */
import type { Context } from "hono";
import type { AppEnv, ServiceDeps } from "../http/app_env.ts";
import { JSON_CONTENT_TYPE } from "../http/json.ts";
import { type HeaderList, PROTECTED_HEADERS } from "../http/response_headers.ts";
import { sha256Hex } from "../signing/signer.ts";
import type { SigningKey } from "../store/mod.ts";

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
  const bodies = new WeakMap<readonly SigningKey[], Uint8Array<ArrayBuffer>>();
  return async (c) => {
    await signer.ready();
    const keys = signer.keys();
    let body = bodies.get(keys);
    if (body === undefined) bodies.set(keys, body = keySetBody(keys));
    const headers: HeaderList = [
      ["content-type", JSON_CONTENT_TYPE],
      ["content-length", String(body.byteLength)],
      ...PROTECTED_HEADERS.filter(([name]) => name !== "vary"),
    ];
    if (signer.enabled) {
      headers.push(
        ...signer.sign({
          method: c.req.method,
          path: c.req.path,
          status: 200,
          sha256: sha256Hex(body),
        }),
      );
    }
    return new Response(body, { headers });
  };
}
