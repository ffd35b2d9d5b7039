/**
 * `deno task tuf-export`: copies a project's TUF repository (docs/tuf.md
 * "Offline mirrors") from a running service into a folder that any static
 * file server can serve: `metadata/` (every root version, the timestamp and
 * the snapshot and targets it names) and `targets/` (each release's file
 * under the path a client asks for). The files are the service's, byte for
 * byte, so the same clients verify the mirror unchanged. The key comes from
 * UPDATE_API_KEY, as for the reference client.
 *
 *   UPDATE_API_KEY=… deno task tuf-export --url https://updates.example.com --project app \
 *     --root 1.root.json --out DIR
 *
 * Nothing is written before the metadata is verified as a TUF client does
 * (`tuf-js`'s TrustedMetadataStore), from the trusted root given with --root:
 * the root versions after it chained from it, the ones before it each signed
 * by the threshold of the next one's own root keys, then the timestamp,
 * snapshot and targets, none expired. A version that is not a whole number
 * of at least 1, a target path that would leave the output folder, or a
 * target that does not match its length and SHA-256 stops the export.
 * `deno task tuf-export` runs this through tools/tuf_export_task.ts, which
 * allows it to write in the output folder only.
 *
 * Exit codes: 0 done, 2 usage, 1 anything else (with a message).
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Metadata, MetadataKind, type Root, type Targets } from "@tufjs/models";
import { TrustedMetadataStore } from "tuf-js/dist/store.js";
import { callerPath } from "./caller_paths.ts";
import { runCliMain, UsageError } from "./cli_main.ts";

const USAGE = "usage: UPDATE_API_KEY=… deno task tuf-export --url BASE --project SLUG " +
  "--root TRUSTED_ROOT_JSON --out DIR";

/** The most root versions walked after the trusted one (`tuf-js` allows 256 rotations). */
const MAX_ROOT_ROTATIONS = 256;

export interface ExportOptions {
  url: string;
  project: string;
  /** The trusted root's JSON text (the root shipped with the app). */
  trustedRoot: string;
  out: string;
  key: string;
}

/** A version the service names, as a file name part: a whole number of at least 1. */
function versionOf(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new Error(
      `${what} is ${JSON.stringify(value)}, not a version (a whole number from 1 to ` +
        `${Number.MAX_SAFE_INTEGER}): nothing written`,
    );
  }
  return value;
}

/** `path` (slash-separated) inside `folder`; throws when it would leave it. */
function inside(folder: string, path: string, what: string): string {
  const segments = path.split("/");
  const plain = segments.every((segment) =>
    segment !== "" && segment !== "." && segment !== ".." && !/[\\\0]/.test(segment)
  );
  const target = resolve(folder, ...segments);
  const within = relative(folder, target);
  if (!plain || within === "" || within.startsWith("..") || isAbsolute(within)) {
    throw new Error(`${what} ${JSON.stringify(path)} would leave ${folder}: nothing written`);
  }
  return target;
}

async function fetchBytes(url: string, key: string): Promise<Uint8Array | null> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`${url} answered ${res.status}`);
  }
  return new Uint8Array(await res.arrayBuffer());
}

async function write(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeFile(path, bytes);
}

function parseRootBytes(bytes: Uint8Array): Metadata<Root> {
  return Metadata.fromJSON(MetadataKind.Root, JSON.parse(new TextDecoder().decode(bytes)));
}

/** Copies the repository once its metadata is verified from the trusted root; returns what was written. */
export async function exportRepository(options: ExportOptions): Promise<string> {
  const base = `${options.url.replace(/\/+$/, "")}/tuf/${encodeURIComponent(options.project)}`;
  const find = (path: string) => fetchBytes(`${base}/${path}`, options.key);
  const get = async (path: string) => {
    const bytes = await find(path);
    if (bytes === null) throw new Error(`${base}/${path} answered 404`);
    return bytes;
  };
  const out = resolve(options.out);
  const verifyFailed = (error: unknown): never => {
    throw new Error(`the repository does not verify: ${(error as Error).message}: nothing written`);
  };

  // The trusted root, and the service's copy of that version: signed by its root keys.
  const trusted = parseRootBytes(new TextEncoder().encode(options.trustedRoot));
  const trustedVersion = versionOf(trusted.signed.version, "the trusted root's version");
  const roots = new Map<number, Uint8Array>();
  const store = new TrustedMetadataStore(Buffer.from(options.trustedRoot));
  try {
    const served = await get(`metadata/${trustedVersion}.root.json`);
    const copy = parseRootBytes(served);
    if (copy.signed.version !== trustedVersion) throw new Error("its version differs");
    trusted.verifyDelegate("root", copy);
    roots.set(trustedVersion, served);
    // Older versions, for clients that trust one of them: each signed by the next one's keys.
    let newer = copy;
    for (let version = trustedVersion - 1; version >= 1; version--) {
      const bytes = await get(`metadata/${version}.root.json`);
      const older = parseRootBytes(bytes);
      if (older.signed.version !== version) throw new Error(`${version}.root.json is misnamed`);
      older.verifyDelegate("root", older);
      older.verifyDelegate("root", newer);
      roots.set(version, bytes);
      newer = older;
    }
    // Newer versions, as a client walks them.
    for (let version = trustedVersion + 1;; version++) {
      if (version > trustedVersion + MAX_ROOT_ROTATIONS) throw new Error("too many root versions");
      const bytes = await find(`metadata/${version}.root.json`);
      if (bytes === null) break;
      store.updateRoot(Buffer.from(bytes));
      roots.set(version, bytes);
    }
  } catch (error) {
    verifyFailed(error);
  }
  const rootVersion = store.root.signed.version;

  let timestamp: Uint8Array, snapshot: Uint8Array, targets: Uint8Array;
  let snapshotVersion: number, targetsVersion: number;
  try {
    timestamp = await get("metadata/timestamp.json");
    store.updateTimestamp(Buffer.from(timestamp));
    snapshotVersion = versionOf(
      store.timestamp!.signed.snapshotMeta.version,
      "the snapshot version",
    );
    snapshot = await get(`metadata/${snapshotVersion}.snapshot.json`);
    store.updateSnapshot(Buffer.from(snapshot));
    targetsVersion = versionOf(
      store.snapshot!.signed.meta["targets.json"]?.version,
      "the targets version",
    );
    targets = await get(`metadata/${targetsVersion}.targets.json`);
    store.updateDelegatedTargets(Buffer.from(targets), "targets", "root");
  } catch (error) {
    if ((error as Error).message.endsWith("nothing written")) throw error;
    verifyFailed(error);
  }

  // Where each target goes, all checked before the first byte is written.
  const listed = (store.targets as Metadata<Targets>).signed.targets;
  const files = Object.values(listed).map((target) => {
    const sha256 = target.hashes.sha256;
    if (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256)) {
      throw new Error(`target ${JSON.stringify(target.path)} has no SHA-256: nothing written`);
    }
    const slash = target.path.lastIndexOf("/");
    const file = `${target.path.slice(0, slash + 1)}${sha256}.${target.path.slice(slash + 1)}`;
    return { file, sha256, length: target.length, to: inside(out, `targets/${file}`, "target") };
  });

  let bytes = 0;
  for (const { file, sha256, length, to } of files) {
    const body = await get(`targets/${file}`);
    const got = createHash("sha256").update(body).digest("hex");
    if (body.length !== length || got !== sha256) {
      throw new Error(`targets/${file} does not match its length and SHA-256 in targets.json`);
    }
    await write(to, body);
    bytes += body.length;
  }
  const metadataDir = join(out, "metadata");
  for (const [version, root] of roots) await write(join(metadataDir, `${version}.root.json`), root);
  await write(join(metadataDir, "root.json"), roots.get(rootVersion)!);
  await write(join(metadataDir, `${snapshotVersion!}.snapshot.json`), snapshot!);
  await write(join(metadataDir, `${targetsVersion!}.targets.json`), targets!);
  // Written last: a client reading the folder while it is written finds what the timestamp names.
  await write(join(metadataDir, "timestamp.json"), timestamp!);

  const stamp = store.timestamp!.signed;
  return `exported ${options.project} to ${out}: verified from root version ${trustedVersion}, ` +
    `root versions 1 to ${rootVersion}, timestamp ${stamp.version} (expires ${stamp.expires}), ` +
    `${files.length} targets (${bytes} bytes)`;
}

export async function run(args: string[], key: string | undefined): Promise<string> {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: "string" },
      project: { type: "string" },
      root: { type: "string" },
      out: { type: "string" },
    },
  });
  if (!values.url || !values.project || !values.root || !values.out) {
    throw new UsageError("--url, --project, --root and --out are needed");
  }
  if (!key) throw new UsageError("UPDATE_API_KEY is needed (a key that may download the project)");
  return await exportRepository({
    url: values.url,
    project: values.project,
    trustedRoot: await Deno.readTextFile(callerPath(values.root)),
    out: callerPath(values.out),
    key,
  });
}

if (import.meta.main) await runCliMain(() => run(Deno.args, Deno.env.get("UPDATE_API_KEY")), USAGE);
