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
import { listSigningKeys, type SigningKeyStatus } from "./signing_keys.ts";
import { listSparkleFeedKeys } from "../feeds/sparkle_keys.ts";
import { getProjectsByIds } from "../projects/projects.ts";
import type { Store } from "../kv/store.ts";
import { SIGNING_KEYS_DIR } from "./key_files.ts";
import { SPARKLE_KEYS_DIR } from "../feeds/sparkle_signing.ts";

/** How soon a file put back is used (the signer and the appcast keys read again within 10 s). */
const READ_BACK = "read within 10 seconds, no restart";

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

/** One missing file: whose it is, where it belongs, what does not work, how to bring it back. */
export interface MissingKeyNotice {
  /** "Signing key k… (active)", "Sparkle key of project …". */
  subject: string;
  path: string;
  effect: string;
  /** Ways to bring it back, the first the usual one. */
  fixes: string[];
}

/**
 * What each missing file stops, and how to bring it back. `signing` is
 * APP_SIGNING (undefined: not known here).
 */
export function describeMissingKeyFiles(
  missing: MissingKeyFiles,
  { signing }: { signing?: boolean } = {},
): MissingKeyNotice[] {
  const notices: MissingKeyNotice[] = [];
  const fromBackup = "restore a backup made with --include-signing-keys";
  for (const { kid, status, path } of missing.signingKeys) {
    const answers = "answers under /api/v1, /feeds and /tuf go out without its signature " +
      "(clients that pin keys refuse them)";
    const tuf = "the TUF metadata it signs is not signed again";
    notices.push({
      subject: `Signing key ${kid} (${status})`,
      path,
      effect: status !== "active"
        ? "It cannot sign once activated"
        : signing === false
        ? `While APP_SIGNING is off, ${tuf}`
        : `${signing === undefined ? "With APP_SIGNING=true, " : ""}${answers}, and ${tuf}`
          .replace(/^./, (c) => c.toUpperCase()),
      fixes: [
        `copy ${SIGNING_KEYS_DIR}/${kid}.pem from the old data dir (0600; ${READ_BACK})`,
        fromBackup,
        `if it is lost, create and activate a new key on the Signing keys page and retire ${kid} ` +
        `(docs/signing.md "Keys and rotation")`,
      ],
    });
  }
  for (const { slug, path, projectId } of missing.sparkleKeys) {
    notices.push({
      subject: `Sparkle key of project ${slug}`,
      path,
      effect: "Its appcast goes out unsigned (apps with SURequireSignedFeed refuse it)",
      fixes: [
        `copy ${SPARKLE_KEYS_DIR}/${projectId}.pem from the old data dir (0600; ${READ_BACK})`,
        fromBackup,
        "give the project's Sparkle key again on the Signing keys page (Signed Sparkle feeds)",
      ],
    });
  }
  return notices;
}

/** A notice as one line of a log or a terminal. */
export function noticeLine({ subject, path, effect, fixes }: MissingKeyNotice): string {
  return `${subject}: its private key file ${path} is missing. ${effect}. ` +
    `Bring it back: ${fixes.join("; or ")}.`;
}
