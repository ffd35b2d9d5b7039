/**
 * Fixtures of the TUF tests (docs/tuf.md): the service on a local port with
 * an active signing key and root keys made by the operator's tool, and the
 * real `tuf-js` client with a fetcher that sends the API key and can be told
 * to hand out other bytes for a path (a hostile mirror).
 */
import { Buffer } from "node:buffer";
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { BaseFetcher, Updater } from "tuf-js";
// tuf-js ends its walk up the root versions at this error's 404: a fetcher of its own throws it.
import { DownloadHTTPError } from "tuf-js/dist/error.js";
import { createKeyFiles } from "../src/signing/key_files.ts";
import {
  createSigningKey,
  listSigningKeys,
  setSigningKeyStatus,
} from "../src/signing/signing_keys.ts";
import { uploadTufRoot } from "../src/tuf/roots.ts";
import { run as tufRoot } from "../tools/tuf_root.ts";
import { createTestApp, type TestApp } from "./helpers.ts";

/** A fetcher that sends `Authorization: Bearer <key>` and serves `overrides` (by URL path). */
export class KeyFetcher extends BaseFetcher {
  readonly overrides = new Map<string, Uint8Array>();
  readonly seen: string[] = [];
  constructor(private readonly key: string | null) {
    super();
  }
  override async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    const path = new URL(url).pathname;
    this.seen.push(path);
    const override = this.overrides.get(path);
    if (override !== undefined) return ReadableStream.from([new Uint8Array(override)]);
    const res = await fetch(url, {
      headers: this.key === null ? {} : { authorization: `Bearer ${this.key}` },
    });
    if (!res.ok || res.body === null) {
      await res.body?.cancel();
      throw new DownloadHTTPError(`GET ${path} answered ${res.status}`, res.status);
    }
    return res.body as ReadableStream<Uint8Array<ArrayBuffer>>;
  }
}

/** A root key as the operator keeps it: a PEM file and its public key. */
export interface RootKey {
  pem: string;
  publicKey: string;
}

export async function makeRootKey(dir: string, name: string): Promise<RootKey> {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const pem = join(dir, `${name}.pem`);
  await Deno.writeTextFile(pem, privateKey.export({ type: "pkcs8", format: "pem" }) as string);
  return { pem, publicKey: publicKey.export({ format: "jwk" }).x as string };
}

/** A new active signing key of the service (the online key of the TUF roles). */
export async function activeSigningKey(t: TestApp): Promise<string> {
  const { kid, publicKey } = await createKeyFiles(t.config.dataDir);
  await createSigningKey(t.store, { kid, public_key: publicKey, created_by: "test" });
  await setSigningKeyStatus(t.store, { kid, status: "active", keepOneActive: false });
  return kid;
}

/**
 * Makes, signs (with `signers`) and uploads the next root version with the
 * tool, as an operator does; returns the file's text.
 */
export async function publishRoot(
  t: TestApp,
  options: {
    dir: string;
    version: number;
    rootKeys: readonly RootKey[];
    threshold: number;
    signers: readonly RootKey[];
  },
): Promise<string> {
  const keySet = join(options.dir, `key-set-${options.version}.json`);
  await Deno.writeTextFile(keySet, JSON.stringify({ keys: await listSigningKeys(t.store) }));
  const file = join(options.dir, `${options.version}.root.json`);
  const previous = join(options.dir, `${options.version - 1}.root.json`);
  await tufRoot([
    "make",
    ...(options.version === 1 ? ["--version", "1"] : ["--previous", previous]),
    // With "=": a base64url key may start with "-", which would read as an option.
    ...options.rootKeys.map((key) => `--root-key=${key.publicKey}`),
    "--threshold",
    String(options.threshold),
    "--key-set",
    keySet,
    "--out",
    file,
  ]);
  await tufRoot(["sign", "--in", file, ...options.signers.flatMap((key) => ["--key", key.pem])]);
  const text = await Deno.readTextFile(file);
  const upload = await uploadTufRoot(t.store, { text, uploadedBy: "test" });
  if ("error" in upload) throw new Error(`root ${options.version} refused: ${upload.error}`);
  return text;
}

export interface ServedApp extends AsyncDisposable {
  t: TestApp;
  baseUrl: string;
  dir: string;
}

/** A test app on a local port, with an active signing key, and a temp dir for files. */
export async function serveApp(): Promise<ServedApp> {
  const t = await createTestApp();
  await activeSigningKey(t);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, t.app.fetch);
  const dir = await Deno.makeTempDir({ prefix: "uds-tuf-" });
  const close = async () => {
    await server.shutdown();
    await t.close();
    await Deno.remove(dir, { recursive: true });
  };
  return {
    t,
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    dir,
    [Symbol.asyncDispose]: close,
  };
}

/** A client installed with `rootText` as its trusted root, in a directory of its own. */
export async function installClient(
  options: { dir: string; name: string; rootText: string; metadataUrl: string; targetUrl: string },
  fetcher: KeyFetcher,
): Promise<{ updater: () => Updater; metadataDir: string; targetDir: string }> {
  const metadataDir = join(options.dir, options.name, "metadata");
  const targetDir = join(options.dir, options.name, "targets");
  await Deno.mkdir(metadataDir, { recursive: true });
  await Deno.mkdir(targetDir, { recursive: true });
  await Deno.writeTextFile(join(metadataDir, "root.json"), options.rootText);
  return {
    metadataDir,
    targetDir,
    // A new Updater per check, as an app that starts, checks and exits.
    updater: () =>
      new Updater({
        metadataDir,
        metadataBaseUrl: options.metadataUrl,
        targetDir,
        targetBaseUrl: options.targetUrl,
        fetcher,
      }),
  };
}

/** The newest release a verified targets.json lists (what a client picks), by its custom fields. */
export async function newestTarget(
  metadataDir: string,
): Promise<{ path: string; version: string; release_id: number }> {
  const targets = JSON.parse(await Deno.readTextFile(join(metadataDir, "targets.json")));
  const entries = Object.entries(
    targets.signed.targets as Record<string, { custom: { version: string; release_id: number } }>,
  ).map(([path, target]) => ({ path, ...target.custom }));
  entries.sort((a, b) => b.release_id - a.release_id);
  if (entries.length === 0) throw new Error("targets.json lists no release");
  return entries[0];
}

/** Checks, then downloads and verifies the newest release; returns its version and bytes. */
export async function fetchNewest(
  client: { updater: () => Updater; metadataDir: string; targetDir: string },
): Promise<{ version: string; bytes: Uint8Array }> {
  const updater = client.updater();
  await updater.refresh();
  const newest = await newestTarget(client.metadataDir);
  const info = await updater.getTargetInfo(newest.path);
  if (info === undefined) throw new Error(`${newest.path} is not a target`);
  const file = join(client.targetDir, newest.path.replaceAll("/", "_"));
  await updater.downloadTarget(info, file);
  return { version: newest.version, bytes: await Deno.readFile(file) };
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}
