/** `deno task client …` against the real service (`deno task start`) on a free port. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { setApiKeyActive } from "../src/credentials/api_keys.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import {
  clientStateDir,
  makeDataTempDir,
  PROJECT_ROOT,
  runTask,
  startServer,
} from "./server_process.ts";
import { exists, sha256 } from "./helpers.ts";

function pattern(size: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: size }, (_, i) => (i * 31 + seed * 17 + (i >> 10)) & 0xff);
}

function environmentWithout(name: string): Record<string, string> {
  const env = Deno.env.toObject();
  delete env[name];
  return env;
}

Deno.test("reference client CLI against the real service", async (t) => {
  const root = await makeDataTempDir("test-client-cli");
  const dataDir = join(root, "service");
  const out = join(root, "out");
  await Deno.mkdir(out);

  const fx = await openDataDir(dataDir);
  const desktop = await fx.project({ name: "Desktop", slug: "desktop" });
  await fx.project({ name: "Empty", slug: "empty" });
  await fx.release(desktop.id, "1.0.0", pattern(1000, 1));
  const broken = await fx.release(desktop.id, "1.0.1", pattern(5000, 2));
  const latestBytes = pattern(200_000, 3);
  const latest = await fx.release(desktop.id, "1.1.0", latestBytes, { build: "7" });
  const { secret: key } = await fx.key({});
  const { secret: noDownloadKey } = await fx.key({ can_download: false });
  const disabled = await fx.key({});
  await setApiKeyActive(fx.store, disabled.apiKey.id, false);
  const { secret: limitedKey } = await fx.key({});
  const { secret: limitedKey2 } = await fx.key({});
  fx.close();
  // Same size, different bytes: the service serves it, the client must refuse it.
  await Deno.writeFile(join(dataDir, "artifacts", broken.storage_key), pattern(5000, 99));

  const server = await startServer(dataDir);
  const client = (args: string[], apiKey: string | null = key) =>
    runTask(
      ["client", ...args, "--base-url", server.baseUrl],
      apiKey ? { UPDATE_API_KEY: apiKey } : {},
    );

  try {
    await t.step("check: up to date is 0, an update available is 10", async () => {
      const same = await client(["check", "--project", "desktop", "--current", "1.1.0"]);
      assert.equal(same.code, 0, same.stderr);
      assert.match(same.stdout, /up to date: 1\.1\.0/);
      const older = await client(["check", "--project", "desktop", "--current", "v1.0.9"]);
      assert.equal(older.code, 10, older.stderr);
      assert.match(older.stdout, /update available: v1\.0\.9 -> 1\.1\.0 \(build 7\)/);
      const newer = await client(["check", "--project", "desktop", "--current", "1.2.0-beta.1"]);
      assert.equal(newer.code, 0, "a newer running version is not offered a downgrade");
    });

    await t.step("download: verified file in place, no leftovers", async () => {
      const target = join(out, "latest.bin");
      const res = await client(["download", "--project", "desktop", "--out", target]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /downloaded 1\.1\.0 .* sha256 ok/);
      assert.equal(sha256(await Deno.readFile(target)), latest.checksum_sha256);
      assert.equal(await exists(`${target}.part`), false);
      assert.equal(await exists(`${target}.part.json`), false);
    });

    await t.step("a relative --out, or none, lands where the user ran the task", async () => {
      // deno task runs in the project directory; INIT_CWD says where the user was (a temporary
      // dir outside the checkout, so the task is named by --config).
      const here = join(out, "user-dir");
      await Deno.mkdir(here);
      const config = join(PROJECT_ROOT, "deno.json");
      const run = async (args: string[]) => {
        const output = await new Deno.Command(Deno.execPath(), {
          args: ["task", "--config", config, "-q", "client", ...args, "--base-url", server.baseUrl],
          cwd: here,
          // As from a shell: deno task keeps an INIT_CWD it inherits (as under `deno task ok`).
          clearEnv: true,
          env: {
            ...environmentWithout("INIT_CWD"),
            NO_COLOR: "1",
            UPDATE_API_KEY: key,
            UPDATE_STATE_DIR: clientStateDir(),
          },
        }).output();
        assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
      };
      await run(["download", "--project", "desktop", "--out", "relative.bin"]);
      assert.equal(sha256(await Deno.readFile(join(here, "relative.bin"))), latest.checksum_sha256);
      await run(["download", "--project", "desktop"]);
      assert.equal(
        sha256(await Deno.readFile(join(here, "app-1.1.0.bin"))),
        latest.checksum_sha256,
      );
      assert.equal(await exists(join(PROJECT_ROOT, "relative.bin")), false);
      assert.equal(await exists(join(PROJECT_ROOT, "app-1.1.0.bin")), false);
    });

    await t.step("download with --current that is up to date downloads nothing", async () => {
      const target = join(out, "nothing.bin");
      const res = await client([
        "download",
        "--project",
        "desktop",
        "--current",
        "1.1.0",
        "--out",
        target,
      ]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /up to date/);
      assert.equal(await exists(target), false);
    });

    await t.step("download with a part left behind resumes or restarts, and verifies", async () => {
      // The ETag is either stale (the service must answer 200) or the service's own
      // quoted SHA-256 (a service with Range support answers 206): both end verified.
      for (const etag of ['"stale"', `"${latest.checksum_sha256}"`]) {
        const target = join(out, `resume-${etag.length}.bin`);
        await Deno.writeFile(`${target}.part`, latestBytes.subarray(0, 80_000));
        await Deno.writeTextFile(
          `${target}.part.json`,
          JSON.stringify({
            release_id: latest.id,
            checksum_sha256: latest.checksum_sha256,
            size_bytes: latest.size_bytes,
            etag,
          }),
        );
        const res = await client(["download", "--release", String(latest.id), "--out", target]);
        assert.equal(res.code, 0, res.stderr);
        assert.equal(sha256(await Deno.readFile(target)), latest.checksum_sha256);
        assert.equal(await exists(`${target}.part`), false);
      }
    });

    await t.step("a corrupted artifact: exit 6, nothing moved into place", async () => {
      const target = join(out, "broken.bin");
      const res = await client(["download", "--release", String(broken.id), "--out", target]);
      assert.equal(res.code, 6, res.stderr);
      assert.match(res.stderr, /SHA-256/);
      assert.equal(await exists(target), false);
      assert.equal(await exists(`${target}.part`), false);
    });

    await t.step("401/403: exit 3 with the service's message", async () => {
      const check = ["check", "--project", "desktop", "--current", "1.0.0"];
      const wrong = await client(check, "uds_not-a-real-key");
      assert.equal(wrong.code, 3);
      assert.match(wrong.stderr, /401 invalid api key/);
      const off = await client(check, disabled.secret);
      assert.equal(off.code, 3);
      const denied = await client(check, noDownloadKey);
      assert.equal(denied.code, 3);
      assert.match(denied.stderr, /403 api key permission denied/);
    });

    await t.step("404: exit 4 for an unknown project, no release, unknown release", async () => {
      const unknown = await client(["check", "--project", "nope", "--current", "1.0.0"]);
      assert.equal(unknown.code, 4);
      assert.match(unknown.stderr, /resource not found/);
      const empty = await client(["check", "--project", "empty", "--current", "1.0.0"]);
      assert.equal(empty.code, 4);
      assert.match(empty.stderr, /release not found/);
      const release = await client(["download", "--release", "999", "--out", join(out, "x")]);
      assert.equal(release.code, 4);
    });

    await t.step("usage errors: exit 2; the key comes only from the environment", async () => {
      const noKey = await client(["check", "--project", "desktop", "--current", "1.0.0"], null);
      assert.equal(noKey.code, 2);
      assert.match(noKey.stderr, /UPDATE_API_KEY/);
      assert.equal((await client(["upgrade"])).code, 2);
      assert.equal((await client(["check", "--project", "desktop"])).code, 2);
      assert.equal((await client(["download", "--project", "desktop", "--release", "1"])).code, 2);
      assert.equal((await client(["check", "--api-key", key])).code, 2);
      assert.equal((await client(["download", "--release", "1", "--retries", "x"])).code, 2);
    });

    await t.step(
      "--help: usage on stdout, exit 0; --version; the User-Agent names the client",
      async () => {
        for (const args of [["--help"], ["-h"], ["help"], ["download", "--help"]]) {
          const help = await runTask(["client", ...args]);
          assert.equal(help.code, 0, `${args}: ${help.stderr}`);
          assert.match(help.stdout, /^usage/);
          assert.match(help.stdout, /deno task client check +--project SLUG --current VERSION/);
          assert.equal(help.stderr, "");
        }
        const version = await runTask(["client", "--version"]);
        assert.equal(version.code, 0);
        assert.match(version.stdout, /^uds-update-client \d+\.\d+\.\d+\n$/);
        const ran = await client(["check", "--project", "desktop", "--current", "1.1.0"]);
        assert.equal(ran.code, 0);
        // The access log line of that request: the client's name and version, not "Deno/…".
        const logged = server.lines().map((line) => JSON.parse(line))
          .filter((line) => line.path === "/api/v1/projects/desktop/releases/latest");
        assert.match(logged.at(-1).user_agent, /^uds-update-client\/\d+\.\d+\.\d+ Deno\/2\./);
      },
    );

    await t.step(
      "installed as a command (deno install), it runs outside the checkout",
      async () => {
        const home = join(root, "install");
        const installed = await new Deno.Command(Deno.execPath(), {
          args: [
            "install",
            "--global",
            "--root",
            home,
            "--name",
            "uds-client",
            "--allow-net",
            "--allow-env=UPDATE_API_KEY,UPDATE_PUBLISH_TOKEN,UPDATE_BASE_URL,UPDATE_STATE_DIR,INIT_CWD,XDG_STATE_HOME,HOME,LOCALAPPDATA",
            "--allow-read",
            "--allow-write",
            "--allow-run=zstd",
            join(PROJECT_ROOT, "client/cli.ts"),
          ],
          stdout: "null",
          stderr: "piped",
        }).output();
        assert.ok(installed.success, new TextDecoder().decode(installed.stderr));
        const elsewhere = join(root, "elsewhere");
        await Deno.mkdir(elsewhere);
        const ran = await new Deno.Command(join(home, "bin", "uds-client"), {
          args: ["download", "--project", "desktop", "--base-url", server.baseUrl],
          cwd: elsewhere,
          // As from a user's shell: no INIT_CWD (which `deno task test` sets for this process).
          clearEnv: true,
          env: { UPDATE_API_KEY: key, PATH: Deno.env.get("PATH") ?? "", HOME: home },
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(ran.code, 0, new TextDecoder().decode(ran.stderr));
        assert.equal(
          sha256(await Deno.readFile(join(elsewhere, latest.filename))),
          latest.checksum_sha256,
        );
        // Its install id, made at this first run, in the user's state directory.
        const id = await Deno.readTextFile(join(home, ".local/state/uds-client/install-id"));
        assert.match(id, /^[0-9a-f-]{36}\n$/);
      },
    );

    await t.step("no service listening: exit 7", async () => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const closedPort = listener.addr.port;
      listener.close();
      const res = await runTask(
        ["client", "check", "--project", "desktop", "--current", "1", "--retries", "0"],
        { UPDATE_API_KEY: key, UPDATE_BASE_URL: `http://127.0.0.1:${closedPort}` },
      );
      assert.equal(res.code, 7, res.stderr);
      // Not just "fetch failed": where it was going.
      assert.match(
        res.stderr,
        new RegExp(
          `network failure reaching 127\\.0\\.0\\.1:${closedPort}/api/v1/projects/desktop/`,
        ),
      );
    });
  } finally {
    await server.stop();
  }

  await t.step(
    "429: waits for Retry-After and succeeds, or exits 5 when out of retries",
    async () => {
      // One token, refilled each second: the download's second request is limited.
      const limited = await startServer(dataDir, {
        APP_CLIENT_RATE_LIMIT_BURST: "1",
        APP_CLIENT_RATE_LIMIT_PER_MINUTE: "60",
      });
      try {
        const run = (apiKey: string, retries: string, target: string) =>
          runTask(
            ["client", "download", "--project", "desktop", "--out", target, "--retries", retries],
            { UPDATE_API_KEY: apiKey, UPDATE_BASE_URL: limited.baseUrl },
          );
        const gaveUp = await run(limitedKey, "0", join(out, "limited-0.bin"));
        assert.equal(gaveUp.code, 5, gaveUp.stderr);
        assert.match(gaveUp.stderr, /429 rate limit exceeded/);
        const waited = await run(limitedKey2, "3", join(out, "limited-3.bin"));
        assert.equal(waited.code, 0, waited.stderr);
        // While it waits it says for what and how long.
        assert.match(
          waited.stderr,
          /rate limited by the service \(429 rate limit exceeded .*\): waiting \d+ s before retry 1 of 3/,
        );
        assert.equal(
          sha256(await Deno.readFile(join(out, "limited-3.bin"))),
          latest.checksum_sha256,
        );
      } finally {
        await limited.stop();
      }
    },
  );

  await Deno.remove(root, { recursive: true });
});
