/**
 * `deno task tuf-export`: copies a project's TUF repository (docs/tuf.md
 * "Offline mirrors") from a running service into a folder that any static
 * file server can serve: `metadata/` (every root version, the timestamp and
 * the snapshot and targets it names) and `targets/` (each release's file
 * under the path a client asks for). The files are the service's, byte for
 * byte, so the same clients verify the mirror unchanged. The key comes from
 * UPDATE_API_KEY, as for the reference client.
 *
 *   UPDATE_API_KEY=… deno task tuf-export --url https://updates.example.com --project app --out DIR
 *
 * Exit codes: 0 done, 2 usage, 1 anything else (with a message).
 */
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { runCliMain, UsageError } from "./cli_main.ts";

const USAGE = "usage: UPDATE_API_KEY=… deno task tuf-export --url BASE --project SLUG --out DIR";

interface ExportOptions {
  url: string;
  project: string;
  out: string;
  key: string;
}

async function fetchBytes(url: string, key: string): Promise<Uint8Array> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
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

/** Copies the repository; returns what was written. */
export async function exportRepository(options: ExportOptions): Promise<string> {
  const base = `${options.url.replace(/\/+$/, "")}/tuf/${encodeURIComponent(options.project)}`;
  const get = (path: string) => fetchBytes(`${base}/${path}`, options.key);
  const json = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes));
  const metadataDir = join(options.out, "metadata");

  const latestRoot = await get("metadata/root.json");
  const rootVersion: number = json(latestRoot).signed.version;
  for (let version = 1; version <= rootVersion; version++) {
    await write(
      join(metadataDir, `${version}.root.json`),
      await get(`metadata/${version}.root.json`),
    );
  }
  await write(join(metadataDir, "root.json"), latestRoot);

  const timestamp = await get("metadata/timestamp.json");
  const snapshotVersion: number = json(timestamp).signed.meta["snapshot.json"].version;
  const snapshot = await get(`metadata/${snapshotVersion}.snapshot.json`);
  const targetsVersion: number = json(snapshot).signed.meta["targets.json"].version;
  const targets = await get(`metadata/${targetsVersion}.targets.json`);
  await write(join(metadataDir, `${snapshotVersion}.snapshot.json`), snapshot);
  await write(join(metadataDir, `${targetsVersion}.targets.json`), targets);
  // Written last: a client reading the folder while it is written finds what the timestamp names.
  await write(join(metadataDir, "timestamp.json"), timestamp);

  const listed: Record<string, { length: number; hashes: { sha256: string } }> =
    json(targets).signed.targets;
  let bytes = 0;
  for (const [path, target] of Object.entries(listed)) {
    const slash = path.lastIndexOf("/");
    const file = `${path.slice(0, slash + 1)}${target.hashes.sha256}.${path.slice(slash + 1)}`;
    const body = await get(`targets/${file}`);
    const sha256 = createHash("sha256").update(body).digest("hex");
    if (body.length !== target.length || sha256 !== target.hashes.sha256) {
      throw new Error(`targets/${file} does not match its length and SHA-256 in targets.json`);
    }
    await write(join(options.out, "targets", file), body);
    bytes += body.length;
  }
  return `exported ${options.project} to ${options.out}: root versions 1 to ${rootVersion}, ` +
    `timestamp ${json(timestamp).signed.version} (expires ${json(timestamp).signed.expires}), ` +
    `${Object.keys(listed).length} targets (${bytes} bytes)`;
}

export async function run(args: string[], key: string | undefined): Promise<string> {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: "string" },
      project: { type: "string" },
      out: { type: "string" },
    },
  });
  if (!values.url || !values.project || !values.out) {
    throw new UsageError("--url, --project and --out are needed");
  }
  if (!key) throw new UsageError("UPDATE_API_KEY is needed (a key that may download the project)");
  return await exportRepository({ url: values.url, project: values.project, out: values.out, key });
}

if (import.meta.main) await runCliMain(() => run(Deno.args, Deno.env.get("UPDATE_API_KEY")), USAGE);
