/**
 * Signs the client API's answers with the active keys (docs/signing.md). The
 * keys are read from KV and the data dir at start and again at most every
 * `RELOAD_MS` (another instance may have rotated them) or at once after an
 * admin change (`reload`). Signing itself is synchronous (node:crypto), so a
 * cached answer's signature is made on the hot path without a turn of the
 * event loop, once per `reuseSeconds`.
 */
import { createHash, type KeyObject, sign } from "node:crypto";
import {
  createSigningKey,
  listSigningKeys,
  setSigningKeyStatus,
  type SigningKey,
} from "../store/mod.ts";
import {
  CONTENT_SHA256_HEADER,
  formatSignatureHeader,
  SIGNATURE_DATE_HEADER,
  SIGNATURE_EXPIRES_HEADER,
  SIGNATURE_HEADER,
  signedMessage,
} from "./format.ts";
import { createKeyFiles, readPrivateKey } from "./key_files.ts";

const RELOAD_MS = 10_000;
const encoder = new TextEncoder();

export interface SignerOptions {
  kv: Deno.Kv;
  dataDir: string;
  /** How long an answer stays valid after it was signed. */
  ttlSeconds: number;
  /** Whether signing is on: then a service without any key makes and activates one. */
  enabled: boolean;
}

export interface AnswerFields {
  method: string;
  path: string;
  status: number;
  sha256: string;
}

export interface Signer {
  /** Whether signing is switched on. */
  readonly enabled: boolean;
  /** Whether the keys were read at least once (else `ready()` first). */
  readonly loaded: boolean;
  /** How long a signature may be reused for the same answer (a fraction of the TTL). */
  readonly reuseSeconds: number;
  /** Reads the keys once; resolves at once after the first time. */
  ready(): Promise<void>;
  /** Reads the keys again now (after an admin change). */
  reload(): Promise<void>;
  /** The signature headers of an answer; none when no active key is here. */
  sign(fields: AnswerFields): [string, string][];
  /** The keys as stored, for the key set and the admin page. */
  keys(): readonly SigningKey[];
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function createSigner(options: SignerOptions): Signer {
  const { kv, dataDir, ttlSeconds } = options;
  let stored: SigningKey[] = [];
  let active: Array<{ kid: string; key: KeyObject }> = [];
  let loadedAt = 0;
  let loading: Promise<void> | null = null;
  let first: Promise<void> | null = null;

  async function load(): Promise<void> {
    let keys = await listSigningKeys(kv);
    if (options.enabled && keys.length === 0) {
      const { kid, publicKey } = await createKeyFiles(dataDir);
      await createSigningKey(kv, { kid, public_key: publicKey, created_by: "service" });
      await setSigningKeyStatus(kv, { kid, status: "active", keepOneActive: false });
      keys = await listSigningKeys(kv);
    }
    const next: typeof active = [];
    for (const key of keys) {
      if (key.status !== "active") continue;
      const privateKey = await readPrivateKey(dataDir, key.kid);
      if (privateKey === null) {
        console.error(`signing key ${key.kid} is active but its file is not in this data dir`);
        continue;
      }
      next.push({ kid: key.kid, key: privateKey });
    }
    stored = keys;
    active = next;
    loadedAt = Date.now();
  }

  function reload(): Promise<void> {
    loading ??= load().finally(() => loading = null);
    return loading;
  }

  const signer: Signer = {
    enabled: options.enabled,
    get loaded() {
      return loadedAt !== 0;
    },
    reuseSeconds: Math.max(1, Math.min(60, Math.floor(ttlSeconds / 4))),
    ready: () => first ??= reload(),
    reload,
    keys: () => stored,
    sign(fields) {
      const nowMs = Date.now();
      if (nowMs - loadedAt > RELOAD_MS && loading === null) {
        reload().catch((error) => console.error("signing keys could not be read:", error));
      }
      if (active.length === 0) return [];
      const date = Math.floor(nowMs / 1000);
      const expires = date + ttlSeconds;
      const signatures = active.map(({ kid, key }) => ({
        kid,
        sig: sign(
          null,
          encoder.encode(signedMessage({ ...fields, date, expires, kid })),
          key,
        ).toString("base64url"),
      }));
      return [
        [SIGNATURE_DATE_HEADER, String(date)],
        [SIGNATURE_EXPIRES_HEADER, String(expires)],
        [CONTENT_SHA256_HEADER, fields.sha256],
        [SIGNATURE_HEADER, formatSignatureHeader(signatures)],
      ];
    },
  };
  return signer;
}
