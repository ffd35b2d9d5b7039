/** Admin accounts: the first account at start, sign-in checks and password changes. */
import type { Config } from "../src/lib/config.ts";
import {
  ADMIN_PASSWORD_MAX_LENGTH,
  ADMIN_PASSWORD_MIN_LENGTH,
  USERNAME_MAX_LENGTH,
} from "../src/lib/limits.ts";
import {
  burnPasswordCheck,
  generatePassword,
  hashPassword,
  verifyPassword,
} from "../src/lib/passwords.ts";
import { StartupError } from "../src/lib/startup.ts";
import {
  type AdminUser,
  createAdminUser,
  getAdminUser,
  hasAdminUser,
  setAdminPasswordHash,
} from "../src/accounts/admin_users.ts";
import { recordAudit } from "../src/kv/audit.ts";
import { deleteAdminSessionsOfUser } from "../src/accounts/sessions.ts";
import { hasLocalPassword } from "../src/sso/records.ts";
import type { Store } from "../src/kv/store.ts";

/** The audit target naming an admin account (`account "admin"`, not "admin admin"). */
export function accountTarget(username: string): string {
  return `account "${username.slice(0, USERNAME_MAX_LENGTH)}"`;
}

/**
 * Refuses (StartupError) an APP_ADMIN_PASSWORD the first admin could not be created with, while
 * no admin exists. main.ts asks this before listening and creates the account only once the
 * listeners are bound, so a start that fails leaves no account behind.
 */
export async function checkFirstAdminSetting(store: Store, config: Config): Promise<void> {
  if (!(await hasAdminUser(store))) checkAdminPasswordSetting(config);
}

function checkAdminPasswordSetting(config: Config): void {
  const length = config.adminPassword?.length;
  if (
    length !== undefined &&
    (length < ADMIN_PASSWORD_MIN_LENGTH || length > ADMIN_PASSWORD_MAX_LENGTH)
  ) {
    throw new StartupError(
      `APP_ADMIN_PASSWORD must be ${ADMIN_PASSWORD_MIN_LENGTH} to ${ADMIN_PASSWORD_MAX_LENGTH} ` +
        `characters long (got ${length}), as the password form requires; or leave it unset ` +
        `for a generated password`,
    );
  }
}

/**
 * With APP_OIDC_LOCAL_PASSWORDS=false, the break-glass sign-in (docs/sso.md
 * "Local passwords and the break-glass sign-in") needs a local account with a
 * password among those APP_OIDC_BREAK_GLASS_USERS names, or no one signs in
 * while the provider is down. None: a StartupError (the start stops, before
 * listening). Some names that are no such account: the warning returned.
 * At a first start the first admin (APP_ADMIN_USERNAME) counts, as it is made
 * with a password once the listeners are bound.
 */
export async function checkBreakGlassAccounts(
  store: Store,
  config: Config,
): Promise<string | null> {
  const sso = config.oidc;
  if (sso === undefined || sso.localPasswords) return null;
  const firstStart = !(await hasAdminUser(store));
  const unusable: string[] = [];
  for (const name of sso.breakGlassUsers) {
    const user = await getAdminUser(store, name);
    if (user === null && firstStart && name === config.adminUsername) continue;
    if (user === null) unusable.push(`"${name}" is no account`);
    else if (!hasLocalPassword(user)) {
      unusable.push(`"${name}" has no password (it signs in through the provider)`);
    }
  }
  if (unusable.length === 0) return null;
  const what = `APP_OIDC_BREAK_GLASS_USERS with APP_OIDC_LOCAL_PASSWORDS=false: ${
    unusable.join(", ")
  }`;
  if (unusable.length === sso.breakGlassUsers.length) {
    throw new StartupError(
      `${what}; no one could sign in while the provider is down. Name a local account with a ` +
        `password, or start once with APP_OIDC_LOCAL_PASSWORDS=true and make one on the ` +
        `Accounts page`,
    );
  }
  return `${what}; only the others can use the break-glass sign-in`;
}

/**
 * Who a failed or refused sign-in is recorded as (docs/admin-ui.md "Using
 * it"): an account's user name as typed; a name that is no account's (often
 * a password typed into the wrong field) only as its first character and its
 * length, since every role reads the audit log.
 */
export async function signInSubject(
  store: Store,
  username: string,
): Promise<{ actor: string; target: string }> {
  if (await getAdminUser(store, username) !== null) {
    return { actor: username, target: accountTarget(username) };
  }
  const characters = [...username];
  const masked = characters.length === 0
    ? "unknown user (empty name)"
    : `unknown user ${characters[0]}… (${characters.length} characters)`;
  return { actor: masked, target: masked };
}

/**
 * Creates the first admin when none exists: from APP_ADMIN_USERNAME and
 * APP_ADMIN_PASSWORD, or with a generated password printed once to the log.
 * An existing admin is never touched. APP_ADMIN_PASSWORD must be as long as
 * the password form requires (12 to 1024 characters): a shorter one stops
 * the first start with one line (StartupError).
 */
export async function bootstrapAdmin(
  store: Store,
  config: Config,
  log: (message: string) => void = console.log,
): Promise<"created" | "exists"> {
  if (await hasAdminUser(store)) return "exists";
  checkAdminPasswordSetting(config);
  const generated = config.adminPassword === undefined;
  const password = config.adminPassword ?? generatePassword();
  const user = await createAdminUser(store, config.adminUsername, await hashPassword(password));
  // Another instance sharing the KV may have created it in the meantime.
  if (user === null) return "exists";
  await recordAudit(store, {
    actor: "system",
    action: "admin.created",
    target: accountTarget(user.username),
    details: generated ? "generated password" : "password from APP_ADMIN_PASSWORD",
    address: "-",
  });
  if (generated) {
    // One line (a JSON log would show a line break as a literal \n), the password last.
    log(
      `created admin user "${user.username}"; sign in at ${config.baseUrl}/admin and change ` +
        `the password, it is not shown again; generated password: ${password}`,
    );
  } else {
    log(`created admin user "${user.username}" with the password from APP_ADMIN_PASSWORD`);
  }
  return "created";
}

/** The account when the password is right, else null; takes as long for unknown names. */
export async function authenticate(
  store: Store,
  username: string,
  password: string,
): Promise<AdminUser | null> {
  const user = await getAdminUser(store, username);
  if (user === null) {
    await burnPasswordCheck(password);
    return null;
  }
  return await verifyPassword(password, user.password_hash) ? user : null;
}

/**
 * Gives an account a new generated password from the host (`deno task reset-password`, for an
 * owner locked out), ends every session of the account as a password change ends the others, and
 * records `auth.password_reset`. Null for an unknown account.
 */
export async function resetPassword(
  store: Store,
  username: string,
): Promise<{ password: string; sessionsEnded: number } | null> {
  if (await getAdminUser(store, username) === null) return null;
  const password = generatePassword();
  await setAdminPasswordHash(store, username, await hashPassword(password));
  const sessionsEnded = await deleteAdminSessionsOfUser(store, username);
  await recordAudit(store, {
    actor: "system",
    action: "auth.password_reset",
    target: accountTarget(username),
    details: `reset on the host with deno task reset-password; ${sessionsEnded} sessions ended`,
    address: "-",
  });
  return { password, sessionsEnded };
}

export async function changePassword(
  store: Store,
  username: string,
  newPassword: string,
): Promise<void> {
  await setAdminPasswordHash(store, username, await hashPassword(newPassword));
}
