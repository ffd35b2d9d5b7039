/**
 * Which private key files the service's records name but its data dir lacks
 * (after a restore from a backup made without `--include-signing-keys`, or on
 * an instance whose files were not copied): the signing keys that are active
 * or pending (docs/signing.md "Keys and rotation"; active ones also sign the
 * TUF metadata, docs/tuf.md) and the projects' Sparkle keys (docs/feeds.md
 * "Signed Sparkle feeds"). Said at start-up and on the admin dashboard and
 * Signing keys page, each with how to bring it back.
 */
import { join } from "node:path";
import { pathExists } from "../lib/files.ts";
import { listSigningKeys, type SigningKeyStatus } from "../store/signing_keys.ts";
import { listSparkleFeedKeys } from "../store/sparkle_keys.ts";
import { getProjectsByIds } from "../store/projects.ts";
import type { Store } from "../store/store.ts";
import { SIGNING_KEYS_DIR } from "./key_files.ts";
import { SPARKLE_KEYS_DIR } from "../feeds/sparkle_signing.ts";

export interface MissingKeyFiles {
  /** Active or pending signing keys whose `signing-keys/<kid>.pem` is missing. */
  signingKeys: Array<{ kid: string; status: SigningKeyStatus; path: string }>;
  /** Projects with a Sparkle key whose `sparkle-keys/<project id>.pem` is missing. */
  sparkleKeys: Array<{ projectId: number; slug: string; path: string }>;
}

export async function findMissingKeyFiles(
  store: Store,
  dataDir: string,
): Promise<MissingKeyFiles> {
  const [keys, sparkle] = await Promise.all([listSigningKeys(store), listSparkleFeedKeys(store)]);
  const signingKeys: MissingKeyFiles["signingKeys"] = [];
  for (const key of keys) {
    if (key.status === "retired") continue;
    const path = join(dataDir, SIGNING_KEYS_DIR, `${key.kid}.pem`);
    if (!(await pathExists(path))) signingKeys.push({ kid: key.kid, status: key.status, path });
  }
  const lacking: Array<{ projectId: number; path: string }> = [];
  for (const { project_id } of sparkle) {
    const path = join(dataDir, SPARKLE_KEYS_DIR, `${project_id}.pem`);
    if (!(await pathExists(path))) lacking.push({ projectId: project_id, path });
  }
  const projects = new Map(
    (await getProjectsByIds(store, lacking.map((l) => l.projectId))).map((p) => [p.id, p.slug]),
  );
  return {
    signingKeys,
    sparkleKeys: lacking.map((l) => ({
      ...l,
      slug: projects.get(l.projectId) ?? `#${l.projectId}`,
    })),
  };
}

export function nothingMissing(missing: MissingKeyFiles): boolean {
  return missing.signingKeys.length === 0 && missing.sparkleKeys.length === 0;
}

/**
 * One sentence per missing file: what does not work without it, and how to
 * bring it back. `signing` is APP_SIGNING (undefined: not known here).
 */
export function describeMissingKeyFiles(
  missing: MissingKeyFiles,
  { signing }: { signing?: boolean } = {},
): string[] {
  const lines: string[] = [];
  for (const { kid, status, path } of missing.signingKeys) {
    const answers = "answers under /api/v1 and /feeds go out without its signature (clients " +
      "that pin keys refuse them)";
    const effect = status !== "active"
      ? "it cannot sign once activated"
      : signing === false
      ? "the TUF metadata it signs cannot be signed again"
      : `${signing === undefined ? "with APP_SIGNING=true, " : ""}${answers}, and the TUF ` +
        "metadata it signs cannot be signed again";
    lines.push(
      `signing key ${kid} is ${status} but its private key file ${path} is missing: ${effect}. ` +
        `Bring it back: copy ${SIGNING_KEYS_DIR}/${kid}.pem from the old data dir, or restore ` +
        `a backup made with \`deno task backup --include-signing-keys\`; if it is lost, ` +
        `create and activate a new key on the admin Signing keys page and retire ${kid} ` +
        `(docs/signing.md "Keys and rotation").`,
    );
  }
  for (const { slug, path, projectId } of missing.sparkleKeys) {
    lines.push(
      `the Sparkle key of project ${slug} is set but its private key file ${path} is missing: ` +
        `its appcast goes out unsigned (apps with SURequireSignedFeed refuse it). Bring it ` +
        `back: copy ${SPARKLE_KEYS_DIR}/${projectId}.pem from the old data dir, restore a ` +
        `backup made with \`deno task backup --include-signing-keys\`, or give the key again ` +
        `on the admin Signing keys page (Signed Sparkle feeds).`,
    );
  }
  return lines;
}
