/**
 * The first admin account and the way back in, with the real `deno task start`: a start that fails
 * (its port in use) leaves no account behind, so the next start prints the generated password;
 * the command README.md gives finds that password in the server's log; `deno task reset-password`
 * gives an account a new password, ends its sessions and writes an audit entry.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createAdminUser, hasAdminUser } from "../src/accounts/admin_users.ts";
import { listAuditEntries } from "../src/kv/audit.ts";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import { sleep } from "./helpers.ts";
import {
  makeDataTempDir,
  PROJECT_ROOT,
  removedAtEnd,
  runTask,
  startServer,
} from "./server_process.ts";
import { createStore } from "../src/kv/store.ts";

/** The `grep` line of README.md's sh block that finds the generated password in `uds.log`. */
async function readmePasswordCommand(): Promise<string> {
  const readme = await Deno.readTextFile(join(PROJECT_ROOT, "README.md"));
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]);
  const line = blocks.flatMap((block) => block.split("\n"))
    .find((text) => text.includes("generated password") && text.includes("uds.log"));
  assert.ok(line, "README.md shows a command that finds the generated password in uds.log");
  return line;
}

async function runInBash(command: string, cwd: string): Promise<string> {
  const out = await new Deno.Command("bash", { args: ["-c", command], cwd, stdout: "piped" })
    .output();
  assert.equal(out.code, 0, `${command} exited ${out.code}`);
  return new TextDecoder().decode(out.stdout).trim();
}

async function adminExists(dataDir: string): Promise<boolean> {
  using kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
  const store = createStore(kv);
  return await hasAdminUser(store);
}

Deno.test({
  name: "a failed first start leaves no account; the next start prints the password",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("first-admin");
  await using _removed = removedAtEnd(dataDir);
  // No APP_ADMIN_PASSWORD (empty counts as unset): the first start generates one.
  const env = { APP_DATA_DIR: dataDir, APP_HOST: "127.0.0.1", APP_ADMIN_PASSWORD: "" };

  await t.step("APP_PORT in use: exit 1, one line, no admin account", async () => {
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const result = await runTask(["start"], { ...env, APP_PORT: String(taken.addr.port) });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^cannot start: APP_PORT: 127\.0\.0\.1:\d+ is already in use/);
    assert.doesNotMatch(result.stdout, /generated password/);
    assert.equal(await adminExists(dataDir), false);
  });

  let password = "";
  await t.step("the next start creates the admin and prints its password", async () => {
    await using server = await startServer(dataDir, env);
    const log = join(dataDir, "uds.log");
    // The log as `deno task start | tee uds.log` keeps it, once the line was written.
    for (let i = 0; i < 100 && !server.output().includes("generated password"); i++) {
      await sleep(50);
    }
    await Deno.writeTextFile(log, server.lines().join("\n") + "\n");
    const found = await runInBash(await readmePasswordCommand(), dataDir);
    const match = /^generated password: ([A-Za-z0-9_-]{24})$/.exec(found);
    assert.ok(match, `README's command printed ${JSON.stringify(found)}`);
    password = match[1];
    const admin = new AdminClient(httpSender([server.baseUrl]));
    assert.equal((await admin.signIn("admin", password)).status, 303);
  });

  await t.step("a later start prints no password", async () => {
    await using server = await startServer(dataDir, env);
    await server.stop();
    assert.doesNotMatch(server.output(), /generated password|created admin user/);
  });
});

Deno.test({
  name: "deno task reset-password: a new password, the account's sessions ended, audited",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("reset-password");
  await using _removed = removedAtEnd(dataDir);
  await using server = await startServer(dataDir, { APP_ADMIN_PASSWORD: "the-old-password" });
  const signedIn = new AdminClient(httpSender([server.baseUrl]));
  assert.equal((await signedIn.signIn("admin", "the-old-password")).status, 303);
  assert.equal((await signedIn.fetch("/admin")).status, 200);

  let password = "";
  await t.step("with the service running: prints the new password once", async () => {
    const result = await runTask(["reset-password", "admin"], { APP_DATA_DIR: dataDir });
    assert.equal(result.code, 0, result.stderr);
    const match =
      /^password of "admin" reset, 1 sessions ended; .*new password: ([A-Za-z0-9_-]{24})\n$/
        .exec(result.stdout);
    assert.ok(match, result.stdout);
    password = match[1];
  });

  await t.step(
    "the old session is ended, the old password refused, the new one signs in",
    async () => {
      const page = await signedIn.fetch("/admin");
      assert.equal(page.status, 303);
      assert.equal(page.headers.get("location"), "/admin/login");
      const old = new AdminClient(httpSender([server.baseUrl]));
      assert.notEqual((await old.signIn("admin", "the-old-password")).status, 303);
      const fresh = new AdminClient(httpSender([server.baseUrl]));
      fresh.address = "198.51.100.9";
      assert.equal((await fresh.signIn("admin", password)).status, 303);
    },
  );

  await t.step("the audit log names the reset", async () => {
    using kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
    const store = createStore(kv);
    const { entries } = await listAuditEntries(store, { limit: 50 });
    const reset = entries.find((entry) => entry.action === "auth.password_reset");
    assert.ok(reset, JSON.stringify(entries.map((entry) => entry.action)));
    assert.equal(reset.actor, "system");
    assert.equal(reset.target, 'account "admin"');
    assert.match(reset.details, /deno task reset-password; 1 sessions ended/);
    assert.ok(!JSON.stringify(entries).includes(password), "the password is never recorded");
  });

  await t.step(
    "an unknown account or a wrong data dir: exit 1, one line, nothing made",
    async () => {
      const unknown = await runTask(["reset-password", "nobody"], { APP_DATA_DIR: dataDir });
      assert.equal(unknown.code, 1);
      assert.equal(
        unknown.stderr,
        `reset-password failed: no account "nobody" in ${join(dataDir, "kv.sqlite3")}; ` +
          'accounts: "admin"\n',
      );
      const empty = join(dataDir, "elsewhere");
      await Deno.mkdir(empty);
      const wrongDir = await runTask(["reset-password", "admin"], { APP_DATA_DIR: empty });
      assert.equal(wrongDir.code, 1);
      assert.match(wrongDir.stderr, /^reset-password failed: no KV database at .*elsewhere/);
      assert.deepEqual([...Deno.readDirSync(empty)], []);
      const usage = await runTask(["reset-password"], { APP_DATA_DIR: dataDir });
      assert.equal(usage.code, 2);
      assert.equal(usage.stderr, "usage: deno task reset-password <user name>\n");
    },
  );

  await t.step("an account whose name starts with '-' is named after --", async () => {
    {
      using kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
      assert.ok(await createAdminUser(createStore(kv), "-bob", "unused-hash"));
    }
    const asOption = await runTask(["reset-password", "-bob"], { APP_DATA_DIR: dataDir });
    assert.equal(asOption.code, 2, "read as an option");
    const named = await runTask(["reset-password", "--", "-bob"], { APP_DATA_DIR: dataDir });
    assert.equal(named.code, 0, named.stderr);
    assert.match(named.stdout, /^password of "-bob" reset, 0 sessions ended; /);
  });
});
