/**
 * The reference client's install id (docs/client-api.md "The install id"):
 * made once per install in its state dir, sent as `X-Install-Id` on every
 * request; two installs send two ids, one install keeps its id across runs.
 * The CLI runs as a process against the in-process service on a port.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  checkForUpdate,
  defaultStateDirectory,
  INSTALL_ID_FILE,
  loadInstallId,
} from "../client/update_client.ts";
import { createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";
import { PROJECT_ROOT } from "./server_process.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

Deno.test("the reference client's install id: one per install, kept, on every request", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  await seedRelease(app, project.id, "1.1.0");
  const { secret } = await seedKey(app);
  const root = await Deno.makeTempDir({ prefix: "client-install-id-" });
  // Each request the service got: its path and the X-Install-Id it carried.
  const seen: Array<{ path: string; installId: string | null }> = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req, info) => {
    seen.push({ path: new URL(req.url).pathname, installId: req.headers.get("x-install-id") });
    return app.app.fetch(req, { remoteAddr: info.remoteAddr });
  });
  const baseUrl = `http://127.0.0.1:${server.addr.port}`;
  const cli = async (args: string[], env: Record<string, string>) => {
    seen.length = 0;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", join(PROJECT_ROOT, "client/cli.ts"), ...args],
      cwd: root,
      clearEnv: true,
      env: { NO_COLOR: "1", UPDATE_API_KEY: secret, UPDATE_BASE_URL: baseUrl, ...env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    assert.ok(seen.length > 0);
    const ids = new Set(seen.map((request) => request.installId));
    assert.equal(ids.size, 1, `one id on every request: ${JSON.stringify(seen)}`);
    return { id: [...ids][0], requests: seen.slice(), stderr };
  };

  try {
    await t.step("library: made once in the state dir, then read back", async () => {
      const dir = join(root, "lib-state");
      const first = await loadInstallId(dir);
      assert.match(first, UUID);
      assert.equal(await loadInstallId(dir), first);
      assert.equal((await Deno.readTextFile(join(dir, INSTALL_ID_FILE))).trim(), first);
      assert.equal((await Deno.stat(join(dir, INSTALL_ID_FILE))).mode! & 0o777, 0o600);
      assert.notEqual(await loadInstallId(join(root, "lib-other")), first, "another install");
      // Two first runs at once agree on one id.
      const racing = await Promise.all(
        Array.from({ length: 8 }, () => loadInstallId(join(root, "lib-race"))),
      );
      assert.equal(new Set(racing).size, 1);
      const left = await Array.fromAsync(Deno.readDir(join(root, "lib-race")), (e) => e.name);
      assert.deepEqual(left, [INSTALL_ID_FILE], "no draft left behind");
      // A file holding no usable id is replaced.
      await Deno.writeTextFile(join(dir, INSTALL_ID_FILE), "\n");
      assert.match(await loadInstallId(dir), UUID);
    });

    await t.step("library: checkForUpdate sends the installId it is given", async () => {
      seen.length = 0;
      const installId = await loadInstallId(join(root, "lib-state"));
      const update = await checkForUpdate({
        baseUrl,
        apiKey: secret,
        installId,
        project: "desktop",
        currentVersion: "1.0.0",
      });
      assert.equal(update.available, true);
      assert.deepEqual(seen.map((request) => request.installId), [installId]);
    });

    await t.step("CLI: two installs send two ids; one keeps its id across runs", async () => {
      const a = join(root, "install-a"), b = join(root, "install-b");
      const download = ["download", "--project", "desktop", "--out", "app.bin"];
      const first = await cli(download, { UPDATE_STATE_DIR: a });
      assert.match(first.id!, UUID);
      assert.deepEqual(first.requests.map((request) => request.path), [
        "/api/v1/projects/desktop/releases/latest",
        `/api/v1/releases/${
          (await app.request("/api/v1/projects/desktop/releases/latest", secret)
            .then((res) => res.json())).release.id
        }/download`,
      ]);
      const again = await cli(["check", "--project", "desktop", "--current", "1.1.0"], {
        UPDATE_STATE_DIR: a,
      });
      assert.equal(again.id, first.id, "the same install, the same id");
      const other = await cli(["check", "--project", "desktop", "--current", "1.1.0"], {
        UPDATE_STATE_DIR: b,
      });
      assert.match(other.id!, UUID);
      assert.notEqual(other.id, first.id, "another install, another id");
      // --state-dir wins over the variable, relative to where the command runs.
      const flagged = await cli([
        "check",
        "--project",
        "desktop",
        "--current",
        "1.1.0",
        "--state-dir",
        "install-b",
      ], { UPDATE_STATE_DIR: a });
      assert.equal(flagged.id, other.id);
    });

    await t.step("CLI: by default the id lives in the user's state directory", async () => {
      const home = join(root, "home");
      const run = () =>
        cli(["check", "--project", "desktop", "--current", "1.1.0"], { HOME: home });
      const first = await run();
      assert.equal(first.stderr, "");
      const file = join(home, ".local", "state", "uds-client", INSTALL_ID_FILE);
      assert.equal((await Deno.readTextFile(file)).trim(), first.id);
      assert.equal((await run()).id, first.id);
      const xdg = await cli(["check", "--project", "desktop", "--current", "1.1.0"], {
        HOME: home,
        XDG_STATE_HOME: join(root, "xdg"),
      });
      assert.notEqual(xdg.id, first.id);
      assert.equal(
        (await Deno.readTextFile(join(root, "xdg", "uds-client", INSTALL_ID_FILE))).trim(),
        xdg.id,
      );
    });

    await t.step("CLI: no state dir at all: a warning, and requests without an id", async () => {
      const res = await cli(["check", "--project", "desktop", "--current", "1.1.0"], {});
      assert.equal(res.id, null);
      assert.match(res.stderr, /warning: no install id/);
    });

    await t.step("defaultStateDirectory follows XDG_STATE_HOME, then HOME", () => {
      const dir = defaultStateDirectory();
      const state = Deno.env.get("XDG_STATE_HOME");
      const home = Deno.env.get("HOME");
      if (state) assert.equal(dir, join(state, "uds-client"));
      else if (home) assert.equal(dir, join(home, ".local", "state", "uds-client"));
    });
  } finally {
    await server.shutdown();
    await Deno.remove(root, { recursive: true });
  }
});
