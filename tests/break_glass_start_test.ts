/**
 * With APP_OIDC_LOCAL_PASSWORDS=false, the accounts APP_OIDC_BREAK_GLASS_USERS names are looked up
 * at start (docs/sso.md "Local passwords and the break-glass sign-in"): none that is a local account
 * with a password stops the start with one line (no one could sign in while the provider is down);
 * some names that are none is a warning. In process (`checkBreakGlassAccounts`) and through
 * `deno task start`.
 */
import assert from "node:assert/strict";
import { checkBreakGlassAccounts } from "../admin/mod.ts";
import { loadConfig } from "../src/lib/config.ts";
import { StartupError } from "../src/lib/startup.ts";
import { createAdminAccount } from "../src/accounts/admin_users.ts";
import { signInSsoAccount } from "../src/sso/records.ts";
import { withKv } from "./helpers.ts";
import { makeDataTempDir, PROJECT_ROOT, removedAtEnd, startServer } from "./server_process.ts";

const OIDC = {
  APP_OIDC_ISSUER: "https://idp.example.invalid/realms/acme",
  APP_OIDC_CLIENT_ID: "uds",
  APP_OIDC_ADMIN_GROUPS: "uds-admins",
  APP_OIDC_LOCAL_PASSWORDS: "false",
};

function configWith(breakGlass: string | undefined, localPasswords = "false") {
  return loadConfig({
    APP_DATA_DIR: "./data/test",
    ...OIDC,
    APP_OIDC_LOCAL_PASSWORDS: localPasswords,
    ...(breakGlass === undefined ? {} : { APP_OIDC_BREAK_GLASS_USERS: breakGlass }),
  });
}

Deno.test("break-glass accounts are checked at start", async (t) => {
  await withKv(async (_kv, store) => {
    await t.step("first start: the first admin, made once listening, counts", async () => {
      assert.equal(await checkBreakGlassAccounts(store, configWith(undefined)), null);
    });

    await t.step("first start naming only an account that does not exist: refused", async () => {
      await assert.rejects(
        checkBreakGlassAccounts(store, configWith("oncall")),
        (error) => {
          assert.ok(error instanceof StartupError);
          assert.match(error.message, /APP_OIDC_BREAK_GLASS_USERS .*"oncall" is no account/);
          assert.match(error.message, /no one could sign in while the provider is down/);
          assert.doesNotMatch(error.message, /\n/);
          return true;
        },
      );
    });

    await createAdminAccount(store, { username: "admin", passwordHash: "pbkdf2-sha256$1$x$y" });
    await signInSsoAccount(store, {
      username: "alice",
      issuer: OIDC.APP_OIDC_ISSUER,
      subject: "alice-sub",
      provider: "Acme",
      role: "admin",
      groups: ["uds-admins"],
    });

    await t.step("an account that signs in only through the provider does not count", async () => {
      await assert.rejects(
        checkBreakGlassAccounts(store, configWith("alice,oncall")),
        /"alice" has no password \(it signs in through the provider\), "oncall" is no account/,
      );
    });

    await t.step("one local account with a password among them: a warning", async () => {
      const warning = await checkBreakGlassAccounts(store, configWith("admin,oncall"));
      assert.match(warning ?? "", /"oncall" is no account; only the others can use/);
      assert.equal(await checkBreakGlassAccounts(store, configWith("admin")), null);
    });

    await t.step("local passwords on: not asked", async () => {
      assert.equal(await checkBreakGlassAccounts(store, configWith("oncall", "true")), null);
    });
  });
});

Deno.test({
  name: "deno task start refuses break-glass names that are no local account",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("break-glass");
  await using _removed = removedAtEnd(dataDir);

  await t.step("none: exit 1 with one line", async () => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", "-q", "start"],
      cwd: PROJECT_ROOT,
      env: {
        NO_COLOR: "1",
        APP_PORT: "0",
        APP_HOST: "127.0.0.1",
        APP_DATA_DIR: dataDir,
        ...OIDC,
        APP_OIDC_BREAK_GLASS_USERS: "oncall",
      },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000),
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, stderr);
    assert.match(
      stderr.trim(),
      /^cannot start: APP_OIDC_BREAK_GLASS_USERS .*"oncall" is no account/,
    );
    assert.equal(stderr.trim().split("\n").length, 1, stderr);
  });

  await t.step("the first admin among them: starts, and warns about the other", async () => {
    await using server = await startServer(dataDir, {
      ...OIDC,
      APP_OIDC_BREAK_GLASS_USERS: "admin,oncall",
    });
    assert.match(server.output(), /oncall\\?" is no account; only the others can use/);
  });
});
