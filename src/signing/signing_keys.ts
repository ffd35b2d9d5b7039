/**
 * The records of the answer-signing keys (docs/signing.md "Keys and rotation"):
 * each key's id, public key and status. The private key is never in KV: it is
 * a 0600 file in the data dir (src/signing/key_files.ts).
 */
import { commitWithRetry, NOTHING_TO_WRITE, now } from "../kv/atomic.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import { signingKeyKey, signingKeysPrefix, signingRootKey } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

/**
 * `pending`: published in the key set, not signing yet (clients learn it
 * first); `active`: signs every answer (two during a rotation); `retired`:
 * signs nothing, listed so that clients drop it.
 */
export type SigningKeyStatus = "pending" | "active" | "retired";

export interface SigningKey {
  /** The key id: `k` and 16 hex digits of the public key's SHA-256. */
  kid: string;
  alg: "Ed25519";
  /** The raw 32-byte public key, base64url without padding. */
  public_key: string;
  status: SigningKeyStatus;
  created_at: string;
  activated_at: string | null;
  retired_at: string | null;
  created_by: string;
}

export async function createSigningKey(
  store: Store,
  input: { kid: string; public_key: string; created_by: string },
): Promise<SigningKey> {
  const key: SigningKey = {
    kid: input.kid,
    alg: "Ed25519",
    public_key: input.public_key,
    status: "pending",
    created_at: now(),
    activated_at: null,
    retired_at: null,
    created_by: input.created_by,
  };
  return await commitWithRetry(async () => ({
    commit: await store.kv.atomic().check({ key: signingKeyKey(key.kid), versionstamp: null })
      .set(signingKeyKey(key.kid), key).commit(),
    value: key,
  }));
}

/** Every key, oldest first. */
export async function listSigningKeys(store: Store): Promise<SigningKey[]> {
  const keys: SigningKey[] = [];
  for await (const entry of store.kv.list<SigningKey>({ prefix: signingKeysPrefix() })) {
    keys.push(entry.value);
  }
  return keys.sort((a, b) =>
    a.created_at.localeCompare(b.created_at) || a.kid.localeCompare(b.kid)
  );
}

/**
 * Moves a key on: pending -> active -> retired (a retired key never signs
 * again). Retiring the last active key is refused while signing is on
 * (`keepOneActive`): every answer would go unsigned.
 */
export async function setSigningKeyStatus(
  store: Store,
  options: { kid: string; status: "active" | "retired"; keepOneActive: boolean },
): Promise<SigningKey> {
  const { kid, status } = options;
  return await commitWithRetry(async () => {
    const entry = await store.kv.get<SigningKey>(signingKeyKey(kid));
    if (entry.value === null) throw new NotFoundError(`signing key ${kid}`);
    const key = entry.value;
    if (key.status === "retired") {
      throw new ValidationError("status", "a retired key cannot be used again");
    }
    if (key.status === status) return { commit: NOTHING_TO_WRITE, value: key };
    const atomic = store.kv.atomic().check(entry);
    if (status === "retired" && options.keepOneActive && key.status === "active") {
      const others = (await listSigningKeys(store)).filter((k) =>
        k.status === "active" && k.kid !== kid
      );
      if (others.length === 0) {
        throw new ValidationError(
          "status",
          "activate another key first: signing is on and this is the only active key",
        );
      }
    }
    const changed: SigningKey = status === "active"
      ? { ...key, status, activated_at: now() }
      : { ...key, status, retired_at: now() };
    return { commit: await atomic.set(signingKeyKey(kid), changed).commit(), value: changed };
  });
}

/**
 * The offline root's document (docs/signing.md "Offline root"), signed off the
 * server and uploaded by an admin: served as it is; clients check it.
 */
export interface SigningRoot {
  payload: string;
  signatures: Array<{ kid: string; sig: string }>;
  uploaded_at: string;
  uploaded_by: string;
}

/** Replaces the offline-root document. */
export async function saveSigningRoot(
  store: Store,
  input: Omit<SigningRoot, "uploaded_at">,
): Promise<SigningRoot> {
  const root: SigningRoot = { ...input, uploaded_at: now() };
  await store.kv.set(signingRootKey(), root);
  return root;
}

export async function getSigningRoot(store: Store): Promise<SigningRoot | null> {
  return (await store.kv.get<SigningRoot>(signingRootKey())).value;
}

export interface AnswerFields {
  method: string;
  path: string;
  status: number;
  sha256: string;
}

/**
 * Signs the client API's answers (src/signing/signer.ts makes the real one;
 * the HTTP layer holds it as this interface).
 */
export interface AnswerSigner {
  /** Whether signing is switched on. */
  readonly enabled: boolean;
  /** Whether the keys were read at least once (else `ready()` first). */
  readonly loaded: boolean;
  /** How long a signature may be reused for the same answer (a fraction of the TTL). */
  readonly reuseSeconds: number;
  /** Changes whenever the active keys change: a reused signature of another generation is stale. */
  readonly generation: number;
  /**
   * Whether an active key is held here, so that answers carry a signature; an
   * answer left unsigned is not reused (a key file put back signs at once).
   */
  readonly signing: boolean;
  /** Reads the keys once; resolves at once after the first time. */
  ready(): Promise<void>;
  /** Reads the keys again now (after an admin change). */
  reload(): Promise<void>;
  /** The signature headers of an answer; none when no active key is here. */
  sign(fields: AnswerFields): [string, string][];
  /** The keys as stored, for the key set and the admin page. */
  keys(): readonly SigningKey[];
}
