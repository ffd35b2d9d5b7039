/**
 * The TUF root uploads (docs/tuf.md "The root") and the projects' Sparkle
 * appcast keys (docs/feeds.md "Signed Sparkle feeds"), both shown on the
 * Signing keys page; admins only (every POST is, roles.ts).
 */
import type { Store } from "../../src/kv/store.ts";
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import {
  parseSparklePrivateKey,
  removeSparkleKeyFile,
  writeSparkleKeyFile,
} from "../../src/feeds/sparkle_signing.ts";
import { getProjectBySlug, getProjectsByIds } from "../../src/projects/projects.ts";
import {
  deleteSparkleFeedKey,
  listSparkleFeedKeys,
  setSparkleFeedKey,
} from "../../src/feeds/sparkle_keys.ts";
import { listTufRoots } from "../../src/tuf/records.ts";
import { tufHealth } from "../../src/tuf/freshness.ts";
import { TUF_PREFIX } from "../../src/tuf/paths.ts";
import { uploadTufRoot } from "../../src/tuf/roots.ts";
import { audit, redirectWithFlash } from "../context.ts";
import { field } from "../forms.ts";
import type { AdminEnv, RouteDeps } from "../types.ts";
import type { TufSummary } from "../views/tuf.tsx";

const LOCATION = "/admin/signing-keys";
/** A bundle identifier as Apple allows it (letters, digits, `-` and `.`). */
const BUNDLE_IDENTIFIER = /^[A-Za-z0-9.-]{1,255}$/;

/** What the Signing keys page shows of the TUF repositories and the Sparkle keys. */
export async function tufPageParts(store: Store, { config }: RouteDeps) {
  const [roots, health, keys] = await Promise.all([
    listTufRoots(store),
    tufHealth(store),
    listSparkleFeedKeys(store),
  ]);
  const tuf: TufSummary = {
    roots,
    health,
    metadataUrl: new URL(`${TUF_PREFIX}/{slug}/metadata/`, config.baseUrl).href
      .replace("%7Bslug%7D", "{slug}"),
  };
  // The projects the keys name, not every project.
  const projects = new Map(
    (await getProjectsByIds(store, keys.map((key) => key.project_id))).map((p) => [p.id, p.slug]),
  );
  const sparkleKeys = keys.map((key) => ({
    ...key,
    slug: projects.get(key.project_id) ?? String(key.project_id),
  }));
  return { tuf, sparkleKeys };
}

export function addTufRoutes(admin: Hono<AdminEnv>, deps: RouteDeps): void {
  const { config } = deps;

  // The root is signed off the server (tools/tuf_root.ts): checked here as clients check it.
  admin.post("/tuf-root", async (c) => {
    const upload = await uploadTufRoot(c.var.store, {
      text: field(c.get("form"), "tuf_root").trim(),
      uploadedBy: c.get("session").username,
    });
    if ("error" in upload) {
      return redirectWithFlash(c, deps, {
        location: LOCATION,
        kind: "error",
        text: `The TUF root was not saved: ${upload.error}.`,
      });
    }
    await audit(c, deps, {
      action: "tuf.root_upload",
      target: `tuf root ${upload.root.version}`,
      details: `expires ${upload.root.expires}`,
    });
    return redirectWithFlash(c, deps, {
      location: LOCATION,
      kind: upload.warnings.length ? "error" : "success",
      text: `TUF root version ${upload.root.version} was saved${
        upload.warnings.length ? `, but ${upload.warnings.join("; ")}` : ""
      }.`,
    });
  });

  admin.post("/sparkle-keys", async (c) => {
    const form = c.get("form");
    const slug = field(form, "project").trim();
    const bundleIdentifier = field(form, "bundle_identifier").trim();
    const refuse = (text: string) =>
      redirectWithFlash(c, deps, { location: LOCATION, kind: "error", text });
    const project = slug === "" ? null : await getProjectBySlug(c.var.store, slug);
    if (project === null) return refuse(`There is no project "${slug}".`);
    if (bundleIdentifier !== "" && !BUNDLE_IDENTIFIER.test(bundleIdentifier)) {
      return refuse("The bundle identifier may hold letters, digits, '-' and '.' only.");
    }
    const parsed = parseSparklePrivateKey(field(form, "private_key"));
    if ("error" in parsed) return refuse(`The Sparkle key was not saved: ${parsed.error}.`);
    await writeSparkleKeyFile(config.dataDir, { projectId: project.id, key: parsed.key });
    await setSparkleFeedKey(c.var.store, {
      project_id: project.id,
      public_key: parsed.publicKey,
      bundle_identifier: bundleIdentifier,
      set_by: c.get("session").username,
    });
    await audit(c, deps, {
      action: "sparkle_key.set",
      target: `project ${project.slug}`,
      details: `public key ${parsed.publicKey}${
        bundleIdentifier ? `; bundle ${bundleIdentifier}` : ""
      }`,
    });
    return redirectWithFlash(c, deps, {
      location: LOCATION,
      kind: "success",
      text: `The appcast of ${project.slug} is signed with the key ${parsed.publicKey}: ` +
        "it must equal the app's SUPublicEDKey.",
    });
  });

  admin.post("/sparkle-keys/:slug/remove", async (c) => {
    const slug = c.req.param("slug");
    const project = await getProjectBySlug(c.var.store, slug);
    if (project === null) throw new HTTPException(404, { message: `There is no project ${slug}.` });
    await deleteSparkleFeedKey(c.var.store, project.id);
    await removeSparkleKeyFile(config.dataDir, project.id);
    await audit(c, deps, { action: "sparkle_key.remove", target: `project ${project.slug}` });
    return redirectWithFlash(c, deps, {
      location: LOCATION,
      kind: "success",
      text: `The appcast of ${project.slug} is no longer signed.`,
    });
  });
}
