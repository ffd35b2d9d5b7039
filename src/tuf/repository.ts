/**
 * A project's TUF repository (docs/tuf.md): keeps its targets, snapshot and
 * timestamp metadata current. `refreshRepository` compares what the targets
 * should list (the project's active releases) with what was signed, and
 * signs new versions when that changed, when the root changed, or when a
 * file is past half its life; otherwise it only reads. Called on every
 * timestamp request (cheap when nothing changed) and by the background
 * refresh (freshness.ts).
 */
import { Buffer } from "node:buffer";
import { createHash, type KeyObject } from "node:crypto";
import type { Metadata, Root } from "@tufjs/models";
import { listReleasesByProject } from "../releases/releases.ts";
import { listSigningKeys, type SigningKey } from "../signing/signing_keys.ts";
import {
  commitTufFiles,
  getLatestTufRoot,
  getTufFile,
  getTufStateEntry,
  getWriteGeneration,
  TUF_KEPT_VERSIONS,
  type TufFile,
  type TufOnlineRole,
  type TufState,
} from "./records.ts";
import type { Project } from "../projects/types.ts";
import type { Release } from "../releases/types.ts";
import { readPrivateKey } from "../signing/key_files.ts";
import {
  buildSnapshot,
  buildTargets,
  buildTimestamp,
  metadataText,
  parseRoot,
  signWith,
  type TargetEntry,
  tufKeyOf,
  type TufSigner,
} from "./metadata.ts";
import type { Store } from "../kv/store.ts";

/** How long each online file is valid; each is signed again once less than half is left. */
export const TUF_LIFETIMES_MS: Readonly<Record<TufOnlineRole, number>> = {
  timestamp: 24 * 3_600_000,
  snapshot: 7 * 24 * 3_600_000,
  targets: 30 * 24 * 3_600_000,
};

/** The service cannot sign a project's metadata (no usable online key for a role). */
export class TufSigningError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TufSigningError";
  }
}

/** Where the signing keys' private halves are, and the ones already read (kid -> key). */
export interface OnlineKeys {
  dataDir: string;
  cache: Map<string, KeyObject>;
}

export function createOnlineKeys(dataDir: string): OnlineKeys {
  return { dataDir, cache: new Map() };
}

/** The path of a release in the targets metadata: `<slug>/<release id>/<file name>`. */
export function targetPath(project: Pick<Project, "slug">, release: Release): string {
  return `${project.slug}/${release.id}/${targetFileName(release.filename)}`;
}

/**
 * The file name in a target path: characters other than letters, digits,
 * `.`, `_`, `+` and `-` become `_`, so that the path is a URL path as it is.
 */
export function targetFileName(filename: string): string {
  return filename.replace(/[^A-Za-z0-9._+-]/g, "_");
}

/** The target entry of a release; null until its SHA-512 is known. */
function targetEntryOf(project: Project, release: Release): TargetEntry | null {
  if (release.checksum_sha512 === undefined) return null;
  return {
    path: targetPath(project, release),
    length: release.size_bytes,
    sha256: release.checksum_sha256,
    sha512: Buffer.from(release.checksum_sha512, "base64").toString("hex"),
    custom: {
      version: release.version,
      build: release.build,
      release_id: release.id,
      created_at: release.created_at,
    },
  };
}

/** A version that grows: past the last one, and at least the time in seconds (after a restore). */
function nextVersion(last: number | undefined, nowMs: number): number {
  return Math.max((last ?? 0) + 1, Math.floor(nowMs / 1000));
}

function pastHalfLife(state: { expires: string }, role: TufOnlineRole, nowMs: number): boolean {
  return Date.parse(state.expires) - nowMs < TUF_LIFETIMES_MS[role] / 2;
}

/** The signers of `role` under `root`: the active signing `keys` it lists, whose files are here. */
async function signersOf(
  { root, role, online, keys }: {
    root: Metadata<Root>;
    role: TufOnlineRole;
    online: OnlineKeys;
    keys: readonly SigningKey[];
  },
): Promise<TufSigner[]> {
  const listed = new Set(root.signed.roles[role]?.keyIDs ?? []);
  const signers: TufSigner[] = [];
  for (const key of keys) {
    if (key.status !== "active") continue;
    const keyId = tufKeyOf(key.public_key).keyID;
    if (!listed.has(keyId)) continue;
    const privateKey = online.cache.get(key.kid) ?? await readPrivateKey(online.dataDir, key.kid);
    if (privateKey === null) continue;
    online.cache.set(key.kid, privateKey);
    signers.push({ keyId, key: privateKey });
  }
  const threshold = root.signed.roles[role]?.threshold ?? 1;
  if (signers.length < threshold) {
    throw new TufSigningError(
      `root version ${root.signed.version} lists no active signing key of this service ` +
        `for the ${role} role (or fewer than its threshold ${threshold})`,
    );
  }
  return signers;
}

/**
 * Brings the project's metadata up to date and returns its state, or null
 * while no root has been uploaded. Throws `TufSigningError` when a file must
 * be signed and no key can sign it.
 */
export async function refreshRepository(
  store: Store,
  options: {
    project: Project;
    online: OnlineKeys;
    nowMs?: number;
    /** Only read the stored state (what is served while signing fails). */
    readOnly?: boolean;
  },
): Promise<TufState | null> {
  const { project, online } = options;
  for (let attempt = 0; attempt < 5; attempt++) {
    const nowMs = options.nowMs ?? Date.now();
    const [rootRecord, entry, generation] = await Promise.all([
      getLatestTufRoot(store),
      getTufStateEntry(store, project.id),
      getWriteGeneration(store),
    ]);
    if (rootRecord === null) return null;
    const old = entry.value;
    if (options.readOnly) return old;
    const sameRoot = old?.root_version === rootRecord.version;
    if (
      old !== null && sameRoot && old.generation === generation &&
      !pastHalfLife(old.timestamp, "timestamp", nowMs) &&
      !pastHalfLife(old.snapshot, "snapshot", nowMs) &&
      !pastHalfLife(old.targets, "targets", nowMs)
    ) {
      return old;
    }
    const root = parseRoot(rootRecord.json);
    const releases = (await listReleasesByProject(store, project.id))
      .filter((release) => release.state === "active")
      .sort((a, b) => a.id - b.id);
    const entries = releases.flatMap((release) => targetEntryOf(project, release) ?? []);
    const digest = createHash("sha256")
      .update(JSON.stringify({ root: rootRecord.version, entries }))
      .digest("hex");

    const newTargets = old === null || !sameRoot || old.targets_digest !== digest ||
      pastHalfLife(old.targets, "targets", nowMs);
    const newSnapshot = newTargets || pastHalfLife(old!.snapshot, "snapshot", nowMs);
    const newTimestamp = newSnapshot || pastHalfLife(old!.timestamp, "timestamp", nowMs);
    const files: TufFile[] = [];
    const state: TufState = old === null ? emptyState(project.id) : { ...old };
    state.generation = generation;
    state.root_version = rootRecord.version;
    state.targets_digest = digest;
    const drop: Array<{ role: TufOnlineRole; version: number }> = [];
    const expiresOf = (role: TufOnlineRole) => nowMs + TUF_LIFETIMES_MS[role];
    // Read once for all the roles; a new timestamp comes with every file signed.
    const keys = newTimestamp ? await listSigningKeys(store) : [];
    const signersFor = (role: TufOnlineRole) => signersOf({ root, role, online, keys });

    if (newTargets) {
      const version = nextVersion(old?.targets.version, nowMs);
      const metadata = buildTargets({ version, expiresMs: expiresOf("targets"), entries });
      signWith(metadata, await signersFor("targets"));
      files.push({ role: "targets", version, text: metadataText(metadata) });
      state.targets = { version, expires: metadata.signed.expires };
      keep(state, { role: "targets", version }, drop);
    }
    let snapshotText: string | null = null;
    if (newSnapshot) {
      const version = nextVersion(old?.snapshot.version, nowMs);
      const metadata = buildSnapshot({
        version,
        expiresMs: expiresOf("snapshot"),
        targetsVersion: state.targets.version,
      });
      signWith(metadata, await signersFor("snapshot"));
      snapshotText = metadataText(metadata);
      files.push({ role: "snapshot", version, text: snapshotText });
      state.snapshot = { version, expires: metadata.signed.expires };
      keep(state, { role: "snapshot", version }, drop);
    }
    if (newTimestamp) {
      const version = nextVersion(old?.timestamp.version, nowMs);
      // Past half its life with the snapshot unchanged: it names the stored snapshot.
      snapshotText ??= await getTufFile(store, project.id, {
        role: "snapshot",
        version: state.snapshot.version,
      });
      if (snapshotText === null) {
        throw new TufSigningError(`snapshot version ${state.snapshot.version} is not stored`);
      }
      const metadata = buildTimestamp({
        version,
        expiresMs: expiresOf("timestamp"),
        snapshotVersion: state.snapshot.version,
        snapshotText,
      });
      signWith(metadata, await signersFor("timestamp"));
      files.push({ role: "timestamp", version, text: metadataText(metadata) });
      state.timestamp = { version, expires: metadata.signed.expires };
      if (old !== null) drop.push({ role: "timestamp", version: old.timestamp.version });
    }
    if (files.length > 0) state.signed_at = new Date(nowMs).toISOString();
    if (await commitTufFiles(store, { entry, state, files, drop })) return state;
  }
  throw new TufSigningError("the metadata kept changing under another writer; try again");
}

/**
 * Records a new version of the targets or snapshot as stored, and marks the
 * oldest for dropping beyond `TUF_KEPT_VERSIONS`: a client that read an
 * earlier timestamp may still fetch the versions it names for a while.
 */
function keep(
  state: TufState,
  file: { role: "targets" | "snapshot"; version: number },
  drop: Array<{ role: TufOnlineRole; version: number }>,
): void {
  const kept = [...state.kept[file.role], file.version];
  while (kept.length > TUF_KEPT_VERSIONS) drop.push({ role: file.role, version: kept.shift()! });
  state.kept = { ...state.kept, [file.role]: kept };
}

function emptyState(projectId: number): TufState {
  const none = { version: 0, expires: new Date(0).toISOString() };
  return {
    project_id: projectId,
    root_version: 0,
    generation: "",
    targets_digest: "",
    targets: none,
    snapshot: none,
    timestamp: none,
    signed_at: new Date(0).toISOString(),
    kept: { targets: [], snapshot: [] },
  };
}
