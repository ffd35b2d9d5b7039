/**
 * Admin accounts. Only the password hash is stored; hashing lives in `src/lib/passwords.ts`.
 * Each account has a role (docs/admin-ui.md "Accounts and roles"); an account stored before roles
 * existed has none and is an `admin`. The last `admin` can be neither removed nor demoted: such
 * writes check every admin account's entry, so two admins demoting each other at once cannot both
 * succeed.
 */
import { USERNAME_MAX_LENGTH, USERNAME_PATTERN } from "../lib/limits.ts";
import { commitWithRetry, now, retryWhileLocked } from "../kv/atomic.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import { adminUserKey, adminUsersPrefix } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

/** What an account may do: `admin` everything, `publisher` releases only, `viewer` read only. */
export type AdminRole = "admin" | "publisher" | "viewer";

export const ADMIN_ROLES: readonly AdminRole[] = ["admin", "publisher", "viewer"];

export function isAdminRole(value: string): value is AdminRole {
  return (ADMIN_ROLES as readonly string[]).includes(value);
}

export interface AdminUser {
  username: string;
  /** Absent on accounts made before roles existed: those are `admin`. */
  role?: AdminRole;
  /** `pbkdf2-sha256$<iterations>$<salt>$<hash>`, see `src/lib/passwords.ts`. */
  password_hash: string;
  created_at: string;
  updated_at: string;
}

export function requireUsername(username: string): string {
  if (!USERNAME_PATTERN.test(username)) {
    throw new ValidationError(
      "username",
      `username must be 1 to ${USERNAME_MAX_LENGTH} characters of letters, digits, . _ @ and -`,
    );
  }
  return username;
}

export async function hasAdminUser(store: Store): Promise<boolean> {
  for await (const _ of store.kv.list({ prefix: adminUsersPrefix() }, { limit: 1 })) return true;
  return false;
}

/** The account, or null for an unknown (or impossible) user name. */
export async function getAdminUser(store: Store, username: string): Promise<AdminUser | null> {
  if (!USERNAME_PATTERN.test(username)) return null;
  return (await store.kv.get<AdminUser>(adminUserKey(username))).value;
}

/** The account's role; an account without one is an `admin`. */
export function roleOf(user: AdminUser): AdminRole {
  return user.role ?? "admin";
}

/** Every account, by user name. */
export async function listAdminUsers(store: Store): Promise<AdminUser[]> {
  const users: AdminUser[] = [];
  for await (const entry of store.kv.list<AdminUser>({ prefix: adminUsersPrefix() })) {
    users.push(entry.value);
  }
  return users;
}

/** Creates an `admin` account; null when the user name is already taken. */
export function createAdminUser(
  store: Store,
  username: string,
  passwordHash: string,
): Promise<AdminUser | null> {
  return createAdminAccount(store, { username, passwordHash });
}

/** Creates an account (an `admin` unless `role` says otherwise); null when the name is taken. */
export async function createAdminAccount(
  store: Store,
  { username, passwordHash, role }: { username: string; passwordHash: string; role?: AdminRole },
): Promise<AdminUser | null> {
  const at = now();
  const user: AdminUser = {
    username: requireUsername(username),
    ...(role === undefined ? {} : { role }),
    password_hash: passwordHash,
    created_at: at,
    updated_at: at,
  };
  const key = adminUserKey(username);
  // Instances sharing one KV file may start together: a locked database is retried; a failed
  // check means the name is taken.
  const commit = await retryWhileLocked(() =>
    store.kv.atomic().check({ key, versionstamp: null }).set(key, user).commit()
  );
  return commit.ok ? user : null;
}

export function setAdminPasswordHash(
  store: Store,
  username: string,
  passwordHash: string,
): Promise<AdminUser> {
  return commitWithRetry(async () => {
    const entry = await store.kv.get<AdminUser>(adminUserKey(username));
    if (entry.value === null) throw new NotFoundError("admin user not found");
    const user = { ...entry.value, password_hash: passwordHash, updated_at: now() };
    const commit = await store.kv.atomic().check(entry).set(adminUserKey(username), user).commit();
    return { commit, value: user };
  });
}

/** Refused because it would leave no account with the `admin` role. */
export class LastAdminError extends ValidationError {
  constructor(message: string) {
    super("role", message);
    this.name = "LastAdminError";
  }
}

/**
 * One write to an account that may take away an admin (a role change or a removal), committed
 * only while another `admin` account remains: the commit checks every admin account's entry.
 */
function changeGuardingLastAdmin(
  store: Store,
  { username, change, refusal }: {
    username: string;
    /** The account after the change, or null to remove it. */
    change: (user: AdminUser) => AdminUser | null;
    refusal: string;
  },
): Promise<{ before: AdminUser; after: AdminUser | null }> {
  return commitWithRetry(async () => {
    const entries: Deno.KvEntry<AdminUser>[] = [];
    for await (const entry of store.kv.list<AdminUser>({ prefix: adminUsersPrefix() })) {
      entries.push(entry);
    }
    const target = entries.find((entry) => entry.value.username === username);
    if (target === undefined) throw new NotFoundError("admin account not found");
    const after = change(target.value);
    const admins = entries.filter((entry) => roleOf(entry.value) === "admin");
    const remaining = admins.filter((entry) =>
      entry.value.username !== username || (after !== null && roleOf(after) === "admin")
    );
    if (admins.length > 0 && remaining.length === 0) throw new LastAdminError(refusal);
    const op = store.kv.atomic().check(target);
    for (const entry of admins) if (entry !== target) op.check(entry);
    if (after === null) op.delete(target.key);
    else op.set(target.key, after);
    return { commit: await op.commit(), value: { before: target.value, after } };
  });
}

/** Gives the account `role`; refused (LastAdminError) when it is the last `admin`. */
export async function setAdminRole(
  store: Store,
  username: string,
  role: AdminRole,
): Promise<{ before: AdminUser; after: AdminUser }> {
  const { before, after } = await changeGuardingLastAdmin(store, {
    username,
    change: (user) => ({ ...user, role, updated_at: now() }),
    refusal: `"${username}" is the last admin; make another account an admin first`,
  });
  return { before, after: after as AdminUser };
}

/** Removes the account; refused (LastAdminError) when it is the last `admin`. */
export async function deleteAdminUser(store: Store, username: string): Promise<AdminUser> {
  const { before } = await changeGuardingLastAdmin(store, {
    username,
    change: () => null,
    refusal: `"${username}" is the last admin and cannot be removed`,
  });
  return before;
}
