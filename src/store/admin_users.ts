/** Admin accounts. Only the password hash is stored; hashing lives in `src/lib/passwords.ts`. */
import { USERNAME_MAX_LENGTH, USERNAME_PATTERN } from "../lib/limits.ts";
import { commitWithRetry, now, retryWhileLocked } from "./atomic.ts";
import { NotFoundError, ValidationError } from "./errors.ts";
import { adminUserKey, adminUsersPrefix } from "./keys.ts";

export interface AdminUser {
  username: string;
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

export async function hasAdminUser(kv: Deno.Kv): Promise<boolean> {
  for await (const _ of kv.list({ prefix: adminUsersPrefix() }, { limit: 1 })) return true;
  return false;
}

/** The account, or null for an unknown (or impossible) user name. */
export async function getAdminUser(kv: Deno.Kv, username: string): Promise<AdminUser | null> {
  if (!USERNAME_PATTERN.test(username)) return null;
  return (await kv.get<AdminUser>(adminUserKey(username))).value;
}

/** Creates an account; null when the user name is already taken. */
export async function createAdminUser(
  kv: Deno.Kv,
  username: string,
  passwordHash: string,
): Promise<AdminUser | null> {
  const at = now();
  const user: AdminUser = {
    username: requireUsername(username),
    password_hash: passwordHash,
    created_at: at,
    updated_at: at,
  };
  const key = adminUserKey(username);
  // Instances sharing one KV file may start together: a locked database is retried; a failed
  // check means the name is taken.
  const commit = await retryWhileLocked(() =>
    kv.atomic().check({ key, versionstamp: null }).set(key, user).commit()
  );
  return commit.ok ? user : null;
}

export function setAdminPasswordHash(
  kv: Deno.Kv,
  username: string,
  passwordHash: string,
): Promise<AdminUser> {
  return commitWithRetry(async () => {
    const entry = await kv.get<AdminUser>(adminUserKey(username));
    if (entry.value === null) throw new NotFoundError("admin user not found");
    const user = { ...entry.value, password_hash: passwordHash, updated_at: now() };
    const commit = await kv.atomic().check(entry).set(adminUserKey(username), user).commit();
    return { commit, value: user };
  });
}
