/**
 * Admin sessions. The browser holds a random id; KV holds the session under
 * the SHA-256 of that id, with `expireIn` so abandoned sessions disappear.
 * Expired entries may linger in KV for a while, so every read also checks the
 * absolute and idle limits itself. `last_seen_at` is written at most once per
 * `touchEveryMs` (a minute; a quarter of the idle limit when that is shorter),
 * so page views do not each cost a durable write. A session signed in through an
 * OpenID Connect provider carries the provider's side in the same record (`sso`, docs/sso.md),
 * so one write starts it and one delete ends it. That delete also takes the provider's tokens an
 * older layout kept apart (`legacySsoSessionKey`); `deleteLegacySsoSessions` takes all of them at
 * start.
 */
import { ADDRESS_MAX_LENGTH, TOKEN_PATTERN } from "../lib/limits.ts";
import { randomToken, sha256Hex } from "../lib/secrets.ts";
import {
  adminSessionByUserKey,
  adminSessionKey,
  adminSessionsByUserPrefix,
  legacySsoSessionKey,
  legacySsoSessionsPrefix,
} from "../kv/keys.ts";
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import type { Store } from "../kv/store.ts";

/** The provider's side of a session signed in through an OpenID Connect provider (src/sso/). */
export interface SsoSessionPart {
  /** The provider's subject of the user: a check's answer must be for it. */
  subject: string;
  /** For the provider's end-session endpoint (`id_token_hint`); empty when none came. */
  id_token: string;
  refresh_token?: string;
  access_token?: string;
  /** When the access token ends, in ms since the epoch (absent: unknown). */
  access_expires_at?: number;
  /** The last time the provider was asked for the user's groups, in ms since the epoch. */
  checked_at: number;
}

/** The tokens a session check of the provider brings. */
export type SsoSessionTokens = Pick<
  SsoSessionPart,
  "id_token" | "refresh_token" | "access_token" | "access_expires_at"
>;

export interface AdminSession {
  username: string;
  csrf_token: string;
  /** Times in milliseconds since the epoch. */
  created_at: number;
  last_seen_at: number;
  /** Absolute end of the session. */
  expires_at: number;
  address: string;
  /** The provider's side when signed in through one; null when signed in with a password. */
  sso: SsoSessionPart | null;
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

/** The record's `expireIn`: until its idle limit or its end, whichever comes first. */
function expiryOf(session: AdminSession, { policy, nowMs }: Required<SessionOptions>) {
  const until = Math.min(session.last_seen_at + policy.idleMs, session.expires_at);
  return { expireIn: Math.max(1, until - nowMs) };
}

/** Starts a session; `sso` is the provider's side of a sign-in through one. */
export async function createAdminSession(
  store: Store,
  input: { username: string; address: string; sso?: SsoSessionPart },
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
    sso: input.sso ?? null,
  };
  await store.kv.atomic()
    .set(adminSessionKey(idHash), session, expiryOf(session, { policy, nowMs }))
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
  // A record without `sso` is of an older shape, whose provider side was kept apart: it ends.
  if (
    session.sso === undefined || nowMs >= session.expires_at ||
    nowMs - session.last_seen_at >= policy.idleMs
  ) {
    await deleteAdminSession(store, id, session.username);
    return null;
  }
  // A short idle limit needs more frequent touches, or an active admin would time out.
  const touchEvery = Math.min(policy.touchEveryMs ?? DEFAULT_TOUCH_EVERY_MS, policy.idleMs / 4);
  if (nowMs - session.last_seen_at >= touchEvery) {
    const touched = { ...session, last_seen_at: nowMs };
    // Checked against the read, so a touch never brings back a session ended meanwhile.
    await store.kv.atomic().check(entry).set(key, touched, expiryOf(touched, { policy, nowMs }))
      .commit();
    return touched;
  }
  return session;
}

/**
 * Hands the provider check of session `id` to this caller when it is due (its groups last read
 * `intervalMs` or longer ago): `checked_at` moves to now in a checked write, so requests arriving
 * together cause one check and a rotated refresh token is used once. The provider's side when
 * due; null when not due, signed in with a password, or ended.
 */
export async function claimSsoCheck(
  store: Store,
  id: string,
  { policy, nowMs = Date.now(), intervalMs }: SessionOptions & { intervalMs: number },
): Promise<SsoSessionPart | null> {
  const claimed = await changeSsoPart(store, id, {
    change: (sso) => nowMs - sso.checked_at < intervalMs ? null : { ...sso, checked_at: nowMs },
    policy,
    nowMs,
  });
  return claimed?.sso ?? null;
}

/**
 * Writes the tokens a session check got into the session's provider side; the session as it now
 * stands, or null when it ended meanwhile.
 */
export async function updateSsoSessionTokens(
  store: Store,
  id: string,
  { tokens, policy, nowMs = Date.now() }: SessionOptions & { tokens: SsoSessionTokens },
): Promise<AdminSession | null> {
  return await changeSsoPart(store, id, {
    change: (sso) => ({ ...sso, ...tokens }),
    policy,
    nowMs,
  });
}

/**
 * Changes the provider's side of session `id` in a checked write, tried again when another
 * write came first: `change` gives the new side, or null to leave it. The session as written;
 * null when nothing was (no change, signed in with a password, or ended).
 */
async function changeSsoPart(
  store: Store,
  id: string,
  { change, policy, nowMs }: Required<SessionOptions> & {
    change: (sso: SsoSessionPart) => SsoSessionPart | null;
  },
): Promise<AdminSession | null> {
  if (!TOKEN_PATTERN.test(id)) return null;
  const key = adminSessionKey(sha256Hex(id));
  return await commitWithRetry(async () => {
    const entry = await store.kv.get<AdminSession>(key);
    const sso = entry.value?.sso ? change(entry.value.sso) : null;
    if (sso === null) return { commit: NOTHING_TO_WRITE, value: null };
    const changed = { ...entry.value!, sso };
    const commit = await store.kv.atomic().check(entry)
      .set(key, changed, expiryOf(changed, { policy, nowMs })).commit();
    return { commit, value: changed };
  });
}

/**
 * Ends a session: its record, with the provider's side when it has one (and the one an older
 * layout kept apart).
 */
export async function deleteAdminSession(
  store: Store,
  id: string,
  username?: string,
): Promise<void> {
  if (!TOKEN_PATTERN.test(id)) return;
  const idHash = sha256Hex(id);
  const op = store.kv.atomic().delete(adminSessionKey(idHash)).delete(legacySsoSessionKey(idHash));
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
    await store.kv.atomic().delete(adminSessionKey(idHash)).delete(legacySsoSessionKey(idHash))
      .delete(entry.key).commit();
    ended++;
  }
  return ended;
}

/** At most this many entries (each checked) go in one commit of `deleteLegacySsoSessions`. */
const LEGACY_DELETES_PER_COMMIT = 100;
/** At most this many commits in one run of `deleteLegacySsoSessions`. */
const LEGACY_COMMITS_PER_RUN = 1_000;

/**
 * Deletes the entries an older layout kept the provider's tokens of a session in
 * (`legacySsoSessionKey`), in checked commits of at most `LEGACY_DELETES_PER_COMMIT` entries; run
 * once at start. It stops when a listing finds fewer than that, or after `LEGACY_COMMITS_PER_RUN`
 * commits (an instance of the older version still writing them cannot keep it going; what is
 * left expires with its session). How many entries it deleted.
 */
export async function deleteLegacySsoSessions(store: Store): Promise<number> {
  let deleted = 0;
  for (let run = 0; run < LEGACY_COMMITS_PER_RUN; run++) {
    const count = await commitWithRetry(async () => {
      const op = store.kv.atomic();
      let listed = 0;
      const entries = store.kv.list(
        { prefix: legacySsoSessionsPrefix() },
        { limit: LEGACY_DELETES_PER_COMMIT },
      );
      for await (const entry of entries) {
        op.check(entry).delete(entry.key);
        listed++;
      }
      return { commit: listed === 0 ? NOTHING_TO_WRITE : await op.commit(), value: listed };
    });
    deleted += count;
    if (count < LEGACY_DELETES_PER_COMMIT) break;
  }
  return deleted;
}
