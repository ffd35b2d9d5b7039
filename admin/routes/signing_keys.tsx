/** Signing keys (docs/signing.md "Keys and rotation"): list, create, activate, retire; admins only. */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { createKeyFiles } from "../../src/signing/key_files.ts";
import { KEY_SET_PATH } from "../../src/signing/format.ts";
import {
  createSigningKey,
  listSigningKeys,
  NotFoundError,
  setSigningKeyStatus,
  type SigningKey,
  ValidationError,
} from "../../src/store/mod.ts";
import { audit, pageContext, redirectWithFlash } from "../context.ts";
import type { AdminEnv, ServiceDeps } from "../types.ts";
import { SigningKeysPage } from "../views/signing_keys.tsx";

const LOCATION = "/admin/signing-keys";

export function addSigningKeyRoutes(admin: Hono<AdminEnv>, deps: ServiceDeps): void {
  const { kv, signer, config } = deps;

  admin.get("/signing-keys", async (c) =>
    c.html(
      <SigningKeysPage
        ctx={pageContext(c, deps)}
        keys={await listSigningKeys(kv)}
        signing={config.signing}
        keySetUrl={new URL(KEY_SET_PATH, config.baseUrl).href}
      />,
    ));

  admin.post("/signing-keys", async (c) => {
    const { kid, publicKey } = await createKeyFiles(config.dataDir);
    const username = c.get("session").username;
    await createSigningKey(kv, { kid, public_key: publicKey, created_by: username });
    await signer.reload();
    await audit(c, deps, { action: "signing_key.create", target: `signing key ${kid}` });
    return redirectWithFlash(c, deps, {
      location: LOCATION,
      kind: "success",
      text: `Signing key ${kid} was created (pending: published, not signing yet).`,
    });
  });

  for (const [action, status] of [["activate", "active"], ["retire", "retired"]] as const) {
    admin.post(`/signing-keys/:kid/${action}`, async (c) => {
      const kid = c.req.param("kid");
      let key: SigningKey;
      try {
        key = await setSigningKeyStatus(kv, { kid, status, keepOneActive: config.signing });
      } catch (error) {
        if (error instanceof NotFoundError) {
          throw new HTTPException(404, { message: `There is no signing key ${kid}.` });
        }
        if (!(error instanceof ValidationError)) throw error;
        return redirectWithFlash(c, deps, {
          location: LOCATION,
          kind: "error",
          text: `Signing key ${kid}: ${error.message}.`,
        });
      }
      await signer.reload();
      await audit(c, deps, { action: `signing_key.${action}`, target: `signing key ${key.kid}` });
      return redirectWithFlash(c, deps, {
        location: LOCATION,
        kind: "success",
        text: `Signing key ${key.kid} is ${key.status}.`,
      });
    });
  }
}
