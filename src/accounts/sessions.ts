/**
 * Admin sessions. The browser holds a random id; KV holds the session under
 * the SHA-256 of that id, with `expireIn` so abandoned sessions disappear.
 * Expired entries may linger in KV for a while, so every read also checks the
 * absolute and idle limits itself. `last_seen_at` is written at most once per
 * `touchEveryMs` (a minute; a quarter of the idle limit when that is shorter),
 * so page views do not each cost a durable write.
 */
import { ADDRESS_MAX_LENGTH, TOKEN_PATTERN } from "../lib/limits.ts";
import { randomToken, sha256Hex } from "../lib/secrets.ts";
import {
  adminSessionByUserKey,
  adminSessionKey,
  adminSessionsByUserPrefix,
  ssoSessionKey,
} from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export interface AdminSession {
  username: string;
  csrf_token: string;
  /** Times in milliseconds since the epoch. */
  created_at: number;
  last_seen_at: number;
  /** Absolute end of the session. */
  expires_at: number;
  address: string;
}

export interface SessionPolicy {
  idleMs: number;
  maxMs: number;
  touchEveryMs?: number;
}

const DEFAULT_TOUCH_EVERY_MS = 60_000;

/** The session policy, and the time it is judged at (now unless given). */
export interface SessionOptions {
  policy: SessionPolicy;
  nowMs?: number;
}

export async function createAdminSession(
  store: Store,
  input: { username: string; address: string },
  { policy, nowMs = Date.now() }: SessionOptions,
): Promise<{ id: string; session: AdminSession }> {
  const id = randomToken();
  const idHash = sha256Hex(id);
  const session: AdminSession = {
    username: input.username,
    csrf_token: randomToken(),
    created_at: nowMs,
    last_seen_at: nowMs,
    expires_at: nowMs + policy.maxMs,
    address: input.address.slice(0, ADDRESS_MAX_LENGTH),
  };
  await store.kv.atomic()
    .set(adminSessionKey(idHash), session, { expireIn: Math.min(policy.idleMs, policy.maxMs) })
    .set(adminSessionByUserKey(input.username, idHash), true, { expireIn: policy.maxMs })
    .commit();
  return { id, session };
}

/** The live session for `id`, or null when unknown, ended, idle too long or past its end. */
export async function getAdminSession(
  store: Store,
  id: string | undefined,
  { policy, nowMs = Date.now() }: SessionOptions,
): Promise<AdminSession | null> {
  if (id === undefined || !TOKEN_PATTERN.test(id)) return null;
  const key = adminSessionKey(sha256Hex(id));
  const entry = await store.kv.get<AdminSession>(key);
  const session = entry.value;
  if (session === null) return null;
  if (nowMs >= session.expires_at || nowMs - session.last_seen_at >= policy.idleMs) {
    await deleteAdminSession(store, id, session.username);
    return null;
  }
  // A short idle limit needs more frequent touches, or an active admin would time out.
  const touchEvery = Math.min(policy.touchEveryMs ?? DEFAULT_TOUCH_EVERY_MS, policy.idleMs / 4);
  if (nowMs - session.last_seen_at >= touchEvery) {
    const touched = { ...session, last_seen_at: nowMs };
    const expireIn = Math.max(1, Math.min(policy.idleMs, session.expires_at - nowMs));
    // Checked against the read, so a touch never brings back a session ended meanwhile.
    await store.kv.atomic().check(entry).set(key, touched, { expireIn }).commit();
    return touched;
  }
  return session;
}

/**
 * Ends a session: its record and, in the same commit, its provider side when it was signed in
 * through one (src/sso/records.ts keeps it under the same id hash).
 */
export async function deleteAdminSession(
  store: Store,
  id: string,
  username?: string,
): Promise<void> {
  if (!TOKEN_PATTERN.test(id)) return;
  const idHash = sha256Hex(id);
  const op = store.kv.atomic().delete(adminSessionKey(idHash)).delete(ssoSessionKey(idHash));
  if (username !== undefined) op.delete(adminSessionByUserKey(username, idHash));
  await op.commit();
}

/** Ends every session of a user except `keepId` (the one changing the password). */
export async function deleteAdminSessionsOfUser(
  store: Store,
  username: string,
  keepId?: string,
): Promise<number> {
  const keepHash = keepId === undefined ? undefined : sha256Hex(keepId);
  let ended = 0;
  for await (const entry of store.kv.list({ prefix: adminSessionsByUserPrefix(username) })) {
    const idHash = entry.key[entry.key.length - 1] as string;
    if (idHash === keepHash) continue;
    await store.kv.atomic().delete(adminSessionKey(idHash)).delete(ssoSessionKey(idHash))
      .delete(entry.key).commit();
    ended++;
  }
  return ended;
}
