/**
 * Signed Sparkle appcasts (docs/feeds.md "Signed Sparkle feeds"), the format
 * Sparkle 2.9+ checks when an app sets `SURequireSignedFeed`: the appcast's
 * bytes, then a trailing comment
 *
 *     <!-- sparkle-signatures:
 *     edSignature: <base64 Ed25519 signature of every byte before the comment>
 *     length: <how many bytes that is>
 *     -->
 *
 * (Sparkle's SPUExtractAppcastContent finds the last `<!-- sparkle-signatures:\n`
 * and verifies the bytes before it; its sign_update writes the block so).
 * The key is the vendor's Sparkle EdDSA key, given per project on the admin
 * Signing keys page; its private half is a 0600 file
 * `sparkle-keys/<project id>.pem` in the data dir, never in KV.
 */
import { Buffer } from "node:buffer";
import { createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";
import { join } from "node:path";
import { concatBytes } from "../lib/bytes.ts";
import { createPrivateFile, makePrivateDir } from "../lib/private_files.ts";
import type { MaybeAsync } from "../kv/cache.ts";
import { getSparkleFeedKeyByProject } from "./sparkle_keys.ts";
import type { Project } from "../projects/types.ts";
import type { Store } from "../kv/store.ts";

export const SPARKLE_KEYS_DIR = "sparkle-keys";

/** The DER prefix of a PKCS#8 Ed25519 private key, before its 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const encoder = new TextEncoder();

/**
 * The private key of a Sparkle key as the vendor gives it: the base64 text
 * that `generate_keys -x <file>` exports (a 32-byte Ed25519 seed); else a
 * message saying what is wrong.
 */
export function parseSparklePrivateKey(
  text: string,
): { key: KeyObject; publicKey: string } | { error: string } {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    return { error: "it is not base64 (paste the file that generate_keys -x writes)" };
  }
  const seed = Buffer.from(trimmed, "base64");
  if (seed.length !== 32) {
    return { error: `it is ${seed.length} bytes, not the 32 of an Ed25519 private key (seed)` };
  }
  const key = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  const raw = createPublicKey(key).export({ format: "jwk" }).x as string;
  return { key, publicKey: Buffer.from(raw, "base64url").toString("base64") };
}

function keyFile(dataDir: string, projectId: number): string {
  return join(dataDir, SPARKLE_KEYS_DIR, `${projectId}.pem`);
}

/** Writes (or replaces) the project's private key file, 0600 in a 0700 directory. */
export async function writeSparkleKeyFile(
  dataDir: string,
  { projectId, key }: { projectId: number; key: KeyObject },
): Promise<void> {
  const dir = join(dataDir, SPARKLE_KEYS_DIR);
  await makePrivateDir(dir);
  const temporary = join(dir, `${projectId}.${crypto.randomUUID()}.tmp`);
  const file = await createPrivateFile(temporary);
  try {
    await file.write(encoder.encode(key.export({ type: "pkcs8", format: "pem" }) as string));
  } finally {
    file.close();
  }
  await Deno.rename(temporary, keyFile(dataDir, projectId));
}

export async function removeSparkleKeyFile(dataDir: string, projectId: number): Promise<void> {
  await Deno.remove(keyFile(dataDir, projectId)).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
}

async function readSparkleKeyFile(dataDir: string, projectId: number): Promise<KeyObject | null> {
  try {
    return createPrivateKey(await Deno.readTextFile(keyFile(dataDir, projectId)));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** `content` with Sparkle's signing block appended, signed with `key`. */
export function signAppcast(content: Uint8Array, key: KeyObject): Uint8Array<ArrayBuffer> {
  const signature = sign(null, content, key).toString("base64");
  const block = encoder.encode(
    `<!-- sparkle-signatures:\nedSignature: ${signature}\nlength: ${content.length}\n-->\n`,
  );
  return concatBytes([content, block]);
}

/** What the appcast of a project needs from its Sparkle key: none, or the key and bundle id. */
export interface AppcastKey {
  key: KeyObject;
  bundleIdentifier: string;
  /** Changes when the vendor gives another key (a cached signed body is then stale). */
  setAt: string;
}

/**
 * The appcast key of each project, read from KV at most every `RELOAD_MS`
 * per project (another instance or the admin page may have changed it).
 */
export function createAppcastKeys(
  store: Store,
  dataDir: string,
): { of(project: Project): MaybeAsync<AppcastKey | null> } {
  const RELOAD_MS = 5_000;
  const held = new Map<number, { at: number; value: AppcastKey | null }>();
  const load = async (project: Project, cached: { value: AppcastKey | null } | undefined) => {
    const record = await getSparkleFeedKeyByProject(store, project.id);
    let value: AppcastKey | null = null;
    if (record !== null) {
      const same = cached?.value?.setAt === record.set_at ? cached.value : null;
      const key = same?.key ?? await readSparkleKeyFile(dataDir, project.id);
      if (key === null) {
        console.error(`the Sparkle key of project ${project.slug} is not in this data dir`);
      } else {
        value = { key, bundleIdentifier: record.bundle_identifier, setAt: record.set_at };
      }
    }
    held.set(project.id, { at: Date.now(), value });
    return value;
  };
  return {
    // At once (no turn of the event loop) while the project's key was read less than RELOAD_MS ago.
    of(project) {
      const cached = held.get(project.id);
      if (cached !== undefined && Date.now() - cached.at < RELOAD_MS) return cached.value;
      return load(project, cached);
    },
  };
}
