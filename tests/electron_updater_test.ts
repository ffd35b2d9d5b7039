/**
 * The real electron-updater (pinned below), run in plain Node as an Electron
 * app runs it (tests/fixtures/electron_updater_client.cjs), against the real
 * server's feed under /feeds (docs/feeds.md): the update is found, downloaded
 * with the key and verified by its SHA-512; a tampered stored artifact is
 * refused with ERR_CHECKSUM_MISMATCH; a key whose scope leaves the project
 * out is refused; after a rollback an app with `allowDowngrade` moves back to
 * the previous release and one without it stays.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { npmInstallOnce } from "../bench/process.ts";
import { rollBack } from "../src/releases/release_policy.ts";
import { changeRollout, endRollout, startRollout } from "../src/releases/rollouts.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { makeDataTempDir, PROJECT_ROOT, removedAtEnd, startServer } from "./server_process.ts";

/** The version the test runs, installed once per machine (`npmInstallOnce` of bench/process.ts). */
const ELECTRON_UPDATER = "electron-updater@6.8.10";
const CLIENT = join(PROJECT_ROOT, "tests", "fixtures", "electron_updater_client.cjs");

interface UpdaterResult {
  available: boolean;
  version?: string;
  downloaded?: string[];
  error?: { code: string | null; message: string };
}

Deno.test("electron-updater updates from the feed with the key", async (t) => {
  const root = await makeDataTempDir("test-electron-updater");
  await using _removed = removedAtEnd(root);
  const modules = join(await npmInstallOnce(ELECTRON_UPDATER), "node_modules");
  const dataDir = join(root, "service");
  const fx = await openDataDir(dataDir);
  const app = await fx.project({ name: "Desktop", slug: "desktop" });
  const other = await fx.project({ name: "Other", slug: "other" });
  await fx.release(app.id, "1.0.0", new Uint8Array(100).fill(1), { filename: "Desktop 1.0.0.exe" });
  const bytes = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 31 + (i >> 9)) & 0xff);
  const latest = await fx.release(app.id, "1.1.0", bytes, { filename: "Desktop Setup 1.1.0.exe" });
  const { secret: key } = await fx.key({});
  const { secret: otherKey } = await fx.key({
    scope_mode: "project_allow_list",
    project_ids: [other.id],
  });
  fx.close();

  await using server = await startServer(dataDir);
  let run = 0;
  const check = async (
    options: { key: string | null; version: string; allowDowngrade?: boolean },
  ): Promise<UpdaterResult> => {
    const work = join(root, `client-${++run}`);
    await Deno.mkdir(work, { recursive: true });
    const out = await new Deno.Command("node", {
      args: [CLIENT],
      env: {
        NODE_PATH: modules,
        FEED_URL: `${server.baseUrl}/feeds/electron/desktop`,
        API_KEY: options.key ?? "",
        WORK_DIR: work,
        APP_VERSION: options.version,
        ALLOW_DOWNGRADE: options.allowDowngrade ? "1" : "",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    return JSON.parse(stdout.trim().split("\n").at(-1)!);
  };
  const fileRequests = () =>
    server.lines().filter((line) => line.includes("/feeds/electron/desktop/files/1.1.0/"));

  await t.step("an older app finds 1.1.0, downloads it with the key, verified", async () => {
    const result = await check({ key, version: "1.0.0" });
    assert.deepEqual(result, {
      available: true,
      version: "1.1.0",
      downloaded: ["Desktop Setup 1.1.0.exe"],
    });
    // The access log line is written as the response ends: it may reach the pipe a moment later.
    const sent = () => fileRequests().some((line) => line.includes('"status":200'));
    for (let i = 0; i < 100 && !sent(); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(sent(), "the file was sent");
  });

  await t.step("without a staged rollout every client is offered it", async () => {
    // No stagingPercentage in the feed (no rollouts yet): a new install id is offered it too.
    const result = await check({ key, version: "1.0.5" });
    assert.equal(result.available, true);
  });

  await t.step("the current version: no update", async () => {
    assert.deepEqual(await check({ key, version: "1.1.0" }), {
      available: false,
      version: "1.1.0",
    });
  });

  await t.step("no key: refused", async () => {
    const none = await check({ key: null, version: "1.0.0" });
    assert.equal(none.available, false);
    assert.match(none.error?.message ?? "", /401/);
  });

  await t.step("a key whose scope leaves the project out: refused", async () => {
    const scoped = await check({ key: otherKey, version: "1.0.0" });
    assert.equal(scoped.available, false);
    assert.match(scoped.error?.message ?? "", /404/);
  });

  /** The release the rollout step stages (1.2.0). */
  let stagedId = 0;
  await t.step(
    "a staged rollout: at 0% no client is offered 1.2.0, at 100% every one is",
    async () => {
      // The server decides per client (docs/rollouts.md), so the feed itself never sends
      // stagingPercentage: electron-updater then takes what it is offered.
      const fx = await openDataDir(dataDir);
      try {
        const staged = await fx.release(app.id, "1.2.0", bytes.slice().reverse(), {
          filename: "Desktop Setup 1.2.0.exe",
          make_latest: false,
        });
        stagedId = staged.id;
        await startRollout(fx.store, staged.id, { percentage: 0 });
        await new Promise((resolve) => setTimeout(resolve, 300)); // the read cache's bound
        assert.deepEqual(await check({ key, version: "1.1.0" }), {
          available: false,
          version: "1.1.0",
        });
        await changeRollout(fx.store, app.id, { percentage: 100 });
        await new Promise((resolve) => setTimeout(resolve, 300));
        const staging100 = await check({ key, version: "1.1.0" });
        assert.equal(staging100.available, true, JSON.stringify(staging100));
        assert.equal(staging100.version, "1.2.0");
        await endRollout(fx.store, app.id);
        await new Promise((resolve) => setTimeout(resolve, 300));
      } finally {
        fx.close();
      }
    },
  );

  await t.step(
    "rolled back: with allowDowngrade the app on 1.2.0 moves back to 1.1.0, without it stays",
    async () => {
      // docs/rollouts.md "A way back": the feed names the older release; only allowDowngrade
      // makes electron-updater take a version lower than the running one.
      const fx = await openDataDir(dataDir);
      try {
        await startRollout(fx.store, stagedId, { percentage: 100 });
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal((await check({ key, version: "1.1.0" })).version, "1.2.0");
        await rollBack(fx.store, app.id);
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.deepEqual(await check({ key, version: "1.2.0", allowDowngrade: true }), {
          available: true,
          version: "1.1.0",
          downloaded: ["Desktop Setup 1.1.0.exe"],
        });
        assert.deepEqual(await check({ key, version: "1.2.0" }), {
          available: false,
          version: "1.1.0",
        });
        await endRollout(fx.store, app.id);
        await new Promise((resolve) => setTimeout(resolve, 300));
      } finally {
        fx.close();
      }
    },
  );

  await t.step("a tampered stored artifact: ERR_CHECKSUM_MISMATCH", async () => {
    const tampered = bytes.slice();
    tampered[1000] ^= 0xff;
    await Deno.writeFile(join(dataDir, "artifacts", latest.storage_key), tampered);
    const result = await check({ key, version: "1.0.0" });
    assert.equal(result.available, true);
    assert.equal(result.error?.code, "ERR_CHECKSUM_MISMATCH", JSON.stringify(result));
  });
});
