/**
 * The TUF repositories' state (docs/tuf.md): the chain of root versions the
 * operator uploads (signed off the server), and per project the versions,
 * expiry and signed text of its targets, snapshot and timestamp metadata.
 * A signed file may be larger than one KV value (64 KiB): it is kept in
 * parts. Every new set of files is one checked commit on the project's state
 * entry, so two instances never sign two different files of one version.
 */
import { now, retryWhileLocked } from "../kv/atomic.ts";
import { ConflictError, ValidationError } from "../kv/errors.ts";
import {
  cacheGenerationKey,
  tufFilePartKey,
  tufFilePrefix,
  tufRootKey,
  tufRootsPrefix,
  tufStateKey,
  tufStatesPrefix,
  tufStatusKey,
} from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

/** One uploaded version of the root metadata, as the operator signed it. */
export interface TufRoot {
  version: number;
  /** The root metadata's JSON text, served unchanged. */
  json: string;
  /** When it expires (RFC 3339), read from the metadata. */
  expires: string;
  uploaded_at: string;
  uploaded_by: string;
}

/** The online roles whose metadata the service signs. */
export type TufOnlineRole = "targets" | "snapshot" | "timestamp";

export interface TufRoleState {
  version: number;
  /** RFC 3339. */
  expires: string;
}

/** What a project's repository holds now. */
export interface TufState {
  project_id: number;
  /** The root version the online metadata was signed under. */
  root_version: number;
  /** The KV write generation the targets were last compared at (cache.ts). */
  generation: string;
  /** A digest of what the targets metadata lists and who signs it: a change means a new version. */
  targets_digest: string;
  targets: TufRoleState;
  snapshot: TufRoleState;
  timestamp: TufRoleState;
  signed_at: string;
  /** The stored versions of the targets and snapshot files, oldest first. */
  kept: { targets: number[]; snapshot: number[] };
}

/** A signed metadata file to store. */
export interface TufFile {
  role: TufOnlineRole;
  version: number;
  text: string;
}

/** How many versions of the targets and snapshot files are kept (older ones are dropped). */
export const TUF_KEPT_VERSIONS = 8;

/** Characters per stored part: far below the KV's 64 KiB per value for any UTF-8 text. */
const PART_CHARS = 16_000;

/** Stores the next root version: the first must be version 1, each next one its successor. */
export async function createTufRoot(
  store: Store,
  input: Omit<TufRoot, "uploaded_at">,
): Promise<TufRoot> {
  const root: TufRoot = { ...input, uploaded_at: now() };
  const latest = await getLatestTufRoot(store);
  const expected = (latest?.version ?? 0) + 1;
  if (root.version !== expected) {
    throw new ValidationError(
      "version",
      `the next root version is ${expected}, not ${root.version}`,
    );
  }
  const commit = await retryWhileLocked(() =>
    store.kv.atomic().check({ key: tufRootKey(root.version), versionstamp: null })
      .set(tufRootKey(root.version), root).commit()
  );
  if (!commit.ok) throw new ConflictError();
  return root;
}

export async function getTufRootByVersion(store: Store, version: number): Promise<TufRoot | null> {
  return (await store.kv.get<TufRoot>(tufRootKey(version))).value;
}

export async function getLatestTufRoot(store: Store): Promise<TufRoot | null> {
  for await (
    const entry of store.kv.list<TufRoot>({ prefix: tufRootsPrefix() }, { reverse: true, limit: 1 })
  ) {
    return entry.value;
  }
  return null;
}

/** Every root version, oldest first. */
export async function listTufRoots(store: Store): Promise<TufRoot[]> {
  const roots: TufRoot[] = [];
  for await (const entry of store.kv.list<TufRoot>({ prefix: tufRootsPrefix() })) {
    roots.push(entry.value);
  }
  return roots;
}

export async function getTufStateEntry(
  store: Store,
  projectId: number,
): Promise<Deno.KvEntryMaybe<TufState>> {
  return await store.kv.get<TufState>(tufStateKey(projectId));
}

/** Every project's state. */
export async function listTufStates(store: Store): Promise<TufState[]> {
  const states: TufState[] = [];
  for await (const entry of store.kv.list<TufState>({ prefix: tufStatesPrefix() })) {
    states.push(entry.value);
  }
  return states;
}

/** The KV-wide write generation (bumped by every project, release or key write), as text. */
export async function getWriteGeneration(store: Store): Promise<string> {
  return (await store.kv.get(cacheGenerationKey())).versionstamp ?? "";
}

/**
 * Writes `state` and its new `files` in one commit checked against the state
 * entry as read (`entry`); drops the versions of each role older than the
 * last `TUF_KEPT_VERSIONS` (the timestamp keeps only its newest). Returns
 * false when another writer committed first (read again and retry).
 */
export async function commitTufFiles(
  store: Store,
  options: {
    entry: Deno.KvEntryMaybe<TufState>;
    state: TufState;
    files: readonly TufFile[];
    /** Versions to drop: every stored part of each. */
    drop: ReadonlyArray<{ role: TufOnlineRole; version: number }>;
  },
): Promise<boolean> {
  const { entry, state, files } = options;
  const atomic = store.kv.atomic().check(entry).set(tufStateKey(state.project_id), state);
  for (const file of files) {
    const parts = splitText(file.text);
    parts.forEach((part, i) => atomic.set(tufFilePartKey(state.project_id, file, i), part));
  }
  const dropped = await Promise.all(options.drop.map(async (file) => {
    const keys: Deno.KvKey[] = [];
    for await (const part of store.kv.list({ prefix: tufFilePrefix(state.project_id, file) })) {
      keys.push(part.key);
    }
    return keys;
  }));
  for (const key of dropped.flat()) atomic.delete(key);
  return (await retryWhileLocked(() => atomic.commit())).ok;
}

/** The text of a stored metadata file, or null. */
export async function getTufFile(
  store: Store,
  projectId: number,
  file: { role: TufOnlineRole; version: number },
): Promise<string | null> {
  const parts: string[] = [];
  for await (const entry of store.kv.list<string>({ prefix: tufFilePrefix(projectId, file) })) {
    parts.push(entry.value);
  }
  return parts.length === 0 ? null : parts.join("");
}

function splitText(text: string): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += PART_CHARS) parts.push(text.slice(i, i + PART_CHARS));
  return parts.length === 0 ? [""] : parts;
}

/** The last background refresh (docs/tuf.md "Freshness"). */
export interface TufRefreshStatus {
  /** When the last run ended (RFC 3339). */
  ran_at: string;
  /** Projects whose metadata could not be signed in that run, with why. */
  failures: Array<{ project: string; error: string }>;
}

export async function saveTufRefreshStatus(store: Store, status: TufRefreshStatus): Promise<void> {
  await retryWhileLocked(() => store.kv.set(tufStatusKey(), status));
}

export async function getTufRefreshStatus(store: Store): Promise<TufRefreshStatus | null> {
  return (await store.kv.get<TufRefreshStatus>(tufStatusKey())).value;
}
