/**
 * What sign-in through an OpenID Connect provider keeps (docs/sso.md): the sign-ins on their way
 * through the provider (single use, ten minutes, keyed by the SHA-256 of their state, so the KV
 * never holds a usable one) and which provider identity each account was made for. The
 * provider's side of a signed-in session is part of the admin session's record
 * (`SsoSessionPart`, src/accounts/sessions.ts).
 */
import { sha256Hex } from "../lib/secrets.ts";
import { type AdminRole, type AdminUser, roleOf, setAdminRole } from "../accounts/admin_users.ts";
import { commitWithRetry, NOTHING_TO_WRITE, now, retryWhileLocked } from "../kv/atomic.ts";
import { adminUserKey, ssoAccountKey, ssoPendingKey } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

/** A sign-in sent to the provider: what its answer must match. */
export interface SsoPending {
  code_verifier: string;
  nonce: string;
  created_at: number;
}

/** The provider identity an account was made for, and what it said at the last sign-in. */
export interface SsoAccount {
  issuer: string;
  subject: string;
  provider: string;
  groups: string[];
  created_at: string;
  updated_at: string;
}

/** A password hash no password matches (`src/lib/passwords.ts` knows no such scheme). */
const SSO_PASSWORD_HASH = "sso$0$$";

/** Whether an account has a password of its own (not one made at a provider sign-in). */
export function hasLocalPassword(user: AdminUser): boolean {
  return user.password_hash !== SSO_PASSWORD_HASH;
}

const PENDING_TTL_MS = 10 * 60_000;

export async function createSsoPending(
  store: Store,
  state: string,
  pending: Omit<SsoPending, "created_at">,
): Promise<void> {
  const value: SsoPending = { ...pending, created_at: Date.now() };
  await retryWhileLocked(() =>
    store.kv.set(ssoPendingKey(sha256Hex(state)), value, { expireIn: PENDING_TTL_MS })
  );
}

/** The sign-in for `state`, removed in the same step: a second call gets null. */
export async function takeSsoPending(store: Store, state: string): Promise<SsoPending | null> {
  const key = ssoPendingKey(sha256Hex(state));
  const entry = await store.kv.get<SsoPending>(key);
  if (entry.value === null || Date.now() - entry.value.created_at > PENDING_TTL_MS) return null;
  const commit = await retryWhileLocked(() => store.kv.atomic().check(entry).delete(key).commit());
  return commit.ok ? entry.value : null;
}

/** What a sign-in through the provider found for the account it names. */
export type SsoAccountResult =
  | { outcome: "created" | "updated"; user: AdminUser; before?: AdminRole }
  | { outcome: "local_account" | "other_identity" | "last_admin" };

/**
 * The account for a provider identity, created on its first sign-in and brought up to date at
 * each: its role from the provider's groups. A name that belongs to a local account, or to another
 * identity of a provider, is refused (no one takes over an account by naming it).
 */
export async function signInSsoAccount(
  store: Store,
  input: {
    username: string;
    issuer: string;
    subject: string;
    provider: string;
    role: AdminRole;
    groups: string[];
  },
): Promise<SsoAccountResult> {
  const { username, issuer, subject, provider, role, groups } = input;
  const userKey = adminUserKey(username);
  const linkKey = ssoAccountKey(username);
  const at = now();
  const created = await commitWithRetry<SsoAccountResult | "existing">(async () => {
    const [userEntry, linkEntry] = await store.kv.getMany<[AdminUser, SsoAccount]>([
      userKey,
      linkKey,
    ]);
    const link = linkEntry.value;
    if (link !== null && (link.issuer !== issuer || link.subject !== subject)) {
      return { commit: NOTHING_TO_WRITE, value: { outcome: "other_identity" } };
    }
    if (userEntry.value !== null) {
      // An account with a password is a local one, whatever identity once had its name.
      const local = link === null || userEntry.value.password_hash !== SSO_PASSWORD_HASH;
      return {
        commit: NOTHING_TO_WRITE,
        value: local ? { outcome: "local_account" as const } : "existing",
      };
    }
    const user: AdminUser = {
      username,
      role,
      password_hash: SSO_PASSWORD_HASH,
      created_at: at,
      updated_at: at,
    };
    const account: SsoAccount = {
      issuer,
      subject,
      provider,
      groups,
      created_at: link?.created_at ?? at,
      updated_at: at,
    };
    const commit = await store.kv.atomic().check(userEntry).check(linkEntry)
      .set(userKey, user).set(linkKey, account).commit();
    return { commit, value: { outcome: "created", user } };
  });
  if (created !== "existing") return created;

  let user = (await store.kv.get<AdminUser>(userKey)).value!;
  const before = roleOf(user);
  if (before !== role) {
    try {
      user = (await setAdminRole(store, username, role)).after;
    } catch (error) {
      if (error instanceof Error && error.name === "LastAdminError") {
        return { outcome: "last_admin" };
      }
      throw error;
    }
  }
  await commitWithRetry(async () => {
    const entry = await store.kv.get<SsoAccount>(linkKey);
    if (entry.value === null) return { commit: NOTHING_TO_WRITE, value: null };
    const commit = await store.kv.atomic().check(entry)
      .set(linkKey, { ...entry.value, provider, groups, updated_at: at }).commit();
    return { commit, value: null };
  });
  return { outcome: "updated", user, before };
}
