/**
 * Signs the client API's answers with the active keys (docs/signing.md). The
 * keys are read from KV and the data dir at start and again at most every
 * `RELOAD_MS` (another instance may have rotated them) or at once after an
 * admin change (`reload`). Signing itself is synchronous (node:crypto), so a
 * cached answer's signature is made on the hot path without a turn of the
 * event loop, once per `reuseSeconds`.
 */
import { type KeyObject, sign } from "node:crypto";
import {
  type AnswerSigner,
  createSigningKey,
  listSigningKeys,
  setSigningKeyStatus,
  type SigningKey,
} from "./signing_keys.ts";
import {
  CONTENT_SHA256_HEADER,
  formatSignatureHeader,
  SIGNATURE_DATE_HEADER,
  SIGNATURE_EXPIRES_HEADER,
  SIGNATURE_HEADER,
  signedMessage,
} from "./format.ts";
import { createKeyFiles, readPrivateKey } from "./key_files.ts";
import type { Store } from "../kv/store.ts";

const RELOAD_MS = 10_000;
const encoder = new TextEncoder();

export interface SignerOptions {
  store: Store;
  dataDir: string;
  /** How long an answer stays valid after it was signed. */
  ttlSeconds: number;
  /** Whether signing is on: then a service without any key makes and activates one. */
  enabled: boolean;
}

/** The answer signer (its interface is the store's, so that the HTTP layer may hold one). */
export type Signer = AnswerSigner;

export function createSigner(options: SignerOptions): Signer {
  const { store, dataDir, ttlSeconds } = options;
  let stored: SigningKey[] = [];
  let active: Array<{ kid: string; key: KeyObject }> = [];
  let loadedAt = 0;
  let loading: Promise<void> | null = null;
  let first: Promise<void> | null = null;
  let generation = 0;

  async function load(): Promise<void> {
    let keys = await listSigningKeys(store);
    if (options.enabled && keys.length === 0) {
      const { kid, publicKey } = await createKeyFiles(dataDir);
      await createSigningKey(store, { kid, public_key: publicKey, created_by: "service" });
      await setSigningKeyStatus(store, { kid, status: "active", keepOneActive: false });
      keys = await listSigningKeys(store);
    }
    const next: typeof active = [];
    for (const key of keys) {
      if (key.status !== "active") continue;
      // A kid names its key (a hash of the public half): a file read once is not read again.
      const privateKey = active.find((held) => held.kid === key.kid)?.key ??
        await readPrivateKey(dataDir, key.kid);
      if (privateKey === null) {
        console.error(`signing key ${key.kid} is active but its file is not in this data dir`);
        continue;
      }
      next.push({ kid: key.kid, key: privateKey });
    }
    stored = keys;
    if (next.map((k) => k.kid).join() !== active.map((k) => k.kid).join()) generation++;
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
    get generation() {
      return generation;
    },
    get signing() {
      return active.length > 0;
    },
    // A KV that does not answer at start leaves the answers unsigned (a verifying client refuses
    // them) rather than failing them; the keys are read again at the next signature.
    ready: () =>
      first ??= reload().catch((error) => {
        loadedAt = Date.now();
        console.error("signing keys could not be read:", error);
      }),
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
