/**
 * Signing keys (docs/signing.md "Keys and rotation"): list, create, activate,
 * retire, and upload the offline root's document (docs/signing.md "Offline
 * root"); admins only.
 */
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { createKeyFiles } from "../../src/signing/key_files.ts";
import { describeMissingKeyFiles, findMissingKeyFiles } from "../../src/signing/key_file_check.ts";
import { KEY_SET_PATH, KEY_SET_ROOT_PATH } from "../../src/signing/format.ts";
import { describeRootDocument, parseRootDocument } from "../../src/signing/root.ts";
import { NotFoundError, ValidationError } from "../../src/kv/errors.ts";
import {
  createSigningKey,
  getSigningRoot,
  listSigningKeys,
  saveSigningRoot,
  setSigningKeyStatus,
  type SigningKey,
} from "../../src/signing/signing_keys.ts";
import { audit, pageContext, redirectWithFlash } from "../context.ts";
import { field } from "../forms.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import { SigningKeysPage } from "../views/signing_keys.tsx";
import type { Store } from "../../src/kv/store.ts";
import { tufPageParts } from "./tuf.tsx";

const LOCATION = "/admin/signing-keys";

export function addSigningKeyRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  const { signer, config } = deps;

  admin.get("/signing-keys", async (c) => {
    const [keys, root, tufParts, missing] = await Promise.all([
      listSigningKeys(c.var.store),
      rootOf(c.var.store),
      tufPageParts(c.var.store, deps),
      findMissingKeyFiles(c.var.store, config.dataDir),
    ]);
    return c.html(
      <SigningKeysPage
        ctx={pageContext(c, deps)}
        keys={keys}
        missingKeyFiles={{
          kids: missing.signingKeys.map((key) => key.kid),
          notices: describeMissingKeyFiles(missing, { signing: config.signing }),
        }}
        signing={config.signing}
        keySetUrl={new URL(KEY_SET_PATH, config.baseUrl).href}
        root={root}
        rootUrl={new URL(KEY_SET_ROOT_PATH, config.baseUrl).href}
        {...tufParts}
      />,
    );
  });

  // The document is signed off the server (tools/sign_key_set.ts): only its shape is checked here.
  admin.post("/signing-root", async (c) => {
    const parsed = parseRootDocument(field(c.get("form"), "root_document").trim());
    if ("error" in parsed) {
      return redirectWithFlash(c, deps, {
        location: LOCATION,
        kind: "error",
        text: `The root document was not saved: ${parsed.error}.`,
      });
    }
    const { document, payload } = parsed;
    await saveSigningRoot(c.var.store, { ...document, uploaded_by: c.get("session").username });
    const kids = payload.keys.map((key) => key.kid).join(", ");
    await audit(c, deps, {
      action: "signing_key.root_upload",
      target: "signing root",
      details: `root ${document.signatures.map((s) => s.kid).join(",")}; keys ${kids}`,
    });
    const missing = (await listSigningKeys(c.var.store)).filter((key) =>
      key.status === "active" && !payload.keys.some((k) => k.kid === key.kid)
    );
    return redirectWithFlash(c, deps, {
      location: LOCATION,
      kind: missing.length ? "error" : "success",
      text: missing.length
        ? `The root document was saved, but it does not list the active key ${
          missing.map((key) => key.kid).join(", ")
        }: clients pinned to the root refuse its signatures.`
        : `The root document was saved: it vouches for ${kids || "no key"}.`,
    });
  });

  admin.post("/signing-keys", async (c) => {
    const { kid, publicKey } = await createKeyFiles(config.dataDir);
    const username = c.get("session").username;
    await createSigningKey(c.var.store, { kid, public_key: publicKey, created_by: username });
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
        key = await setSigningKeyStatus(c.var.store, {
          kid,
          status,
          keepOneActive: config.signing,
        });
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

async function rootOf(store: Store) {
  const root = await getSigningRoot(store);
  const summary = describeRootDocument(root);
  return root && summary &&
    { ...summary, uploadedBy: root.uploaded_by, uploadedAt: root.uploaded_at };
}
