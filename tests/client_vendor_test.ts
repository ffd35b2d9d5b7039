/**
 * The reference client run from a vendor's own repository (docs/publishing.md
 * "From your own repository"): a copy of client/ run with `deno run`, and
 * client/cli.ts run from a URL. Relative paths (the artifact, the notes file,
 * the download) are taken from the directory the command runs in, even with
 * an INIT_CWD inherited from an outer `npm run`; nothing lands in the
 * service's checkout.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createTestApp, exists, seedKey, seedProject, sha256 } from "./helpers.ts";
import { seedPublishToken } from "./publish_helpers.ts";
import { PROJECT_ROOT } from "./server_process.ts";

/** The permissions docs/publishing.md gives the client. */
const PERMISSIONS = [
  "--allow-net",
  "--allow-env=UPDATE_API_KEY,UPDATE_PUBLISH_TOKEN,UPDATE_BASE_URL,UPDATE_STATE_DIR,INIT_CWD,XDG_STATE_HOME,HOME,LOCALAPPDATA",
  "--allow-read",
  "--allow-write",
];

Deno.test("the client runs from a vendor's repository; relative paths are the caller's", async (t) => {
  await using app = await createTestApp();
  await seedProject(app, { slug: "desktop" });
  const { secret: token } = await seedPublishToken(app.store);
  const { secret: key } = await seedKey(app);
  // The service on a port; /client/… serves the checkout's client/ as a web server would.
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req, info) => {
      const path = new URL(req.url).pathname;
      if (/^\/client\/[a-z_]+\.ts$/.test(path)) {
        return new Response(await Deno.readFile(join(PROJECT_ROOT, path)), {
          headers: { "content-type": "application/typescript" },
        });
      }
      return app.app.fetch(req, { remoteAddr: info.remoteAddr });
    },
  );
  const host = `127.0.0.1:${server.addr.port}`;
  const baseUrl = `http://${host}`;

  // A vendor's Electron app: package.json (dependencies not installed), a changelog, a build.
  const root = await Deno.makeTempDir({ prefix: "client-vendor-" });
  const repo = join(root, "my-app");
  const elsewhere = join(root, "npm-started-here");
  await Deno.mkdir(join(repo, "dist"), { recursive: true });
  await Deno.mkdir(elsewhere);
  await Deno.writeTextFile(
    join(repo, "package.json"),
    JSON.stringify({ name: "my-app", dependencies: { "electron-updater": "^6.3.0" } }),
  );
  await Deno.writeTextFile(join(repo, "CHANGELOG.md"), "Faster start\n");
  const artifact = crypto.getRandomValues(new Uint8Array(50_000));
  await Deno.writeFile(join(repo, "dist", "my-app-2.0.0.zip"), artifact);
  await Deno.mkdir(join(repo, "tools"));
  await Deno.mkdir(join(repo, "tools", "uds-client"));
  for await (const entry of Deno.readDir(join(PROJECT_ROOT, "client"))) {
    await Deno.copyFile(
      join(PROJECT_ROOT, "client", entry.name),
      join(repo, "tools", "uds-client", entry.name),
    );
  }

  const run = async (script: string[], args: string[], cwd: string) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...script, ...args, "--base-url", baseUrl],
      cwd,
      clearEnv: true,
      env: {
        NO_COLOR: "1",
        PATH: Deno.env.get("PATH") ?? "",
        HOME: join(root, "home"),
        // Left by an outer `npm run` started elsewhere: not where this command runs.
        INIT_CWD: elsewhere,
        // Remote modules are cached here, not in the user's cache.
        DENO_DIR: join(root, "deno-dir"),
        UPDATE_PUBLISH_TOKEN: token,
        UPDATE_API_KEY: key,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    return new TextDecoder().decode(output.stdout);
  };
  const copy = [...PERMISSIONS, "tools/uds-client/cli.ts"];

  try {
    await t.step("publish from the repository: --file and --notes-file are its paths", async () => {
      const answer = JSON.parse(
        await run(copy, [
          "publish",
          "--project",
          "desktop",
          "--version",
          "2.0.0",
          "--file",
          "dist/my-app-2.0.0.zip",
          "--notes-file",
          "CHANGELOG.md",
        ], repo),
      );
      assert.equal(answer.release.filename, "my-app-2.0.0.zip");
      assert.equal(answer.release.checksum_sha256, sha256(artifact));
      assert.match(answer.release.release_notes, /^Faster start/);
    });

    await t.step("download lands in the directory it runs in", async () => {
      await run(copy, ["download", "--project", "desktop"], repo);
      assert.equal(sha256(await Deno.readFile(join(repo, "my-app-2.0.0.zip"))), sha256(artifact));
      await Deno.mkdir(join(repo, "downloads"));
      await run(copy, ["download", "--project", "desktop", "--out", "downloads/new.zip"], repo);
      assert.equal(sha256(await Deno.readFile(join(repo, "downloads/new.zip"))), sha256(artifact));
    });

    await t.step("client/cli.ts run from a URL, in a subdirectory", async () => {
      const sub = join(repo, "dist");
      await run(
        [`--allow-import=${host}`, ...PERMISSIONS, `${baseUrl}/client/cli.ts`],
        ["download", "--project", "desktop", "--out", "from-url.zip"],
        sub,
      );
      assert.equal(sha256(await Deno.readFile(join(sub, "from-url.zip"))), sha256(artifact));
    });

    await t.step("nothing landed in the checkout or where INIT_CWD points", async () => {
      for (const name of ["my-app-2.0.0.zip", "new.zip", "from-url.zip", "downloads"]) {
        assert.equal(await exists(join(PROJECT_ROOT, name)), false, name);
      }
      assert.deepEqual(await Array.fromAsync(Deno.readDir(elsewhere)), []);
    });
  } finally {
    await server.shutdown();
    await Deno.remove(root, { recursive: true });
  }
});
