/**
 * `deno task reset-password <user name>`: gives an admin account a new generated password, on the
 * host, for an owner who cannot sign in (docs/operators.md "Resetting an admin password"). Works
 * on the KV of APP_DATA_DIR (or APP_KV_PATH), with the service running or stopped; ends the
 * account's sessions and records `auth.password_reset` in the audit log.
 */
import { resetPassword } from "../admin/accounts.ts";
import { isRemoteKv } from "../src/lib/config.ts";
import { listAdminUsers } from "../src/accounts/admin_users.ts";
import { createStore } from "../src/kv/store.ts";
import { runTool, ToolError } from "./run_tool.ts";

/** A local KV file must exist: opening a wrong path would make an empty KV there. */
async function openExistingKv(path: string): Promise<Deno.Kv> {
  if (!isRemoteKv(path)) {
    try {
      await Deno.stat(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      throw new ToolError(
        `no KV database at ${path}; set APP_DATA_DIR (or APP_KV_PATH) as the service has it`,
      );
    }
  }
  return await Deno.openKv(path);
}

await runTool("reset-password", async (username, config) => {
  using kv = await openExistingKv(config.kvPath);
  const store = createStore(kv);
  const reset = await resetPassword(store, username);
  if (reset === null) {
    const names = (await listAdminUsers(store)).map((user) => `"${user.username}"`);
    throw new ToolError(
      `no account "${username}" in ${config.kvPath}; accounts: ${names.join(", ") || "none"}`,
    );
  }
  // One line, the password last, as the first start prints it.
  return `password of "${username}" reset, ${reset.sessionsEnded} sessions ended; sign in and ` +
    `change it, it is not shown again; new password: ${reset.password}`;
}, { usage: "<user name>" });
