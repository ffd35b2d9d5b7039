/** The reference client's `publish` (client/publish.ts): safe retries in process, the CLI against the real service. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { publishRelease } from "../client/publish.ts";
import { listReleasesByProject } from "../src/releases/releases.ts";
import { getRollout } from "../src/releases/rollouts.ts";
import { createTestApp, seedProject, sha256 } from "./helpers.ts";
import { seedPublishToken } from "./publish_helpers.ts";
import { makeDataTempDir, runTask, startServer } from "./server_process.ts";
import { randomBytes } from "./admin_helpers.ts";
import { openDataDir } from "./data_dir_fixtures.ts";

Deno.test("client publish retries a dropped connection only when nothing was recorded", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  const { secret } = await seedPublishToken(app.store);
  const dir = await Deno.makeTempDir({ prefix: "client-publish-" });
  const file = join(dir, "app.bin");
  const bytes = randomBytes(200_000);
  await Deno.writeFile(file, bytes);
  const toApp = (input: string | URL | Request, init?: RequestInit) =>
    Promise.resolve(app.app.fetch(new Request(input, init)));
  const options = {
    baseUrl: "http://localhost",
    token: secret,
    project: "desktop",
    file,
    sleep: () => Promise.resolve(),
  };

  try {
    await t.step("dropped after the service recorded it: no second upload", async () => {
      let posts = 0;
      const published = await publishRelease({
        ...options,
        version: "1.0.0",
        fetch: async (input, init) => {
          if (init?.method !== "POST") return await toApp(input, init);
          posts++;
          const res = await toApp(input, init);
          await res.body?.cancel();
          throw new TypeError("connection reset"); // the answer is lost
        },
      });
      assert.equal(posts, 1);
      assert.equal(published.release.version, "1.0.0");
      assert.equal(published.release.checksum_sha256, sha256(bytes));
      assert.equal((await listReleasesByProject(app.store, project.id)).length, 1);
    });

    await t.step("dropped before it was recorded: uploaded again, once", async () => {
      let posts = 0;
      const published = await publishRelease({
        ...options,
        version: "1.0.1",
        build: "9",
        releaseNotes: "Notes\nwith lines",
        draft: true,
        fetch: async (input, init) => {
          if (init?.method === "POST" && posts++ === 0) {
            await (init.body as ReadableStream).cancel();
            throw new TypeError("connection refused");
          }
          return await toApp(input, init);
        },
      });
      assert.equal(posts, 2);
      assert.deepEqual(
        [published.release.state, published.release.build, published.release.release_notes],
        ["draft", "9", "Notes\nwith lines"],
      );
      assert.equal((await listReleasesByProject(app.store, project.id)).length, 2);
    });

    await t.step("a refusal is not retried", async () => {
      let posts = 0;
      await assert.rejects(
        publishRelease({
          ...options,
          project: "nope",
          version: "2.0.0",
          fetch: (input, init) => {
            posts++;
            return toApp(input, init);
          },
        }),
        (error: Error & { kind?: string }) => error.kind === "not_found",
      );
      assert.equal(posts, 1);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task client publish against the real service", async (t) => {
  const dataDir = await makeDataTempDir("client-publish");
  await using server = await startServer(dataDir);
  const fx = await openDataDir(dataDir);
  const { store } = fx;
  const work = await Deno.makeTempDir({ prefix: "client-publish-cli-" });
  try {
    const project = await fx.project({ name: "Desktop", slug: "desktop" });
    const { secret } = await seedPublishToken(store);
    const { secret: clientKey } = await fx.key({ name: "c" });
    const file = join(work, "desktop.zip");
    await Deno.writeFile(file, randomBytes(100_000));
    await Deno.writeTextFile(join(work, "notes.md"), "What is new");
    const publish = (args: string[], token = secret) =>
      runTask(["client", "publish", "--base-url", server.baseUrl, ...args], {
        UPDATE_PUBLISH_TOKEN: token,
        INIT_CWD: work,
      });

    await t.step("prints the new release as JSON", async () => {
      const res = await publish([
        "--project",
        "desktop",
        "--version",
        "1.0.0",
        "--file",
        "desktop.zip",
        "--notes-file",
        "notes.md",
        "--not-latest",
      ]);
      assert.equal(res.code, 0, res.stderr);
      const answer = JSON.parse(res.stdout);
      assert.equal(answer.release.version, "1.0.0");
      assert.equal(answer.release.release_notes, "What is new");
      assert.equal(answer.release.filename, "desktop.zip");
      assert.equal(answer.release.is_latest, false, "nothing was latest, and it asked not to be");
    });

    await t.step("--draft", async () => {
      const res = await publish(
        ["--project", "desktop", "--version", "1.1.0", "--file", file, "--draft"],
      );
      assert.equal(res.code, 0, res.stderr);
      assert.equal(JSON.parse(res.stdout).release.state, "draft");
    });

    await t.step("--rollout-*: the release starts a staged rollout over the latest", async () => {
      const base = await publish(["--project", "desktop", "--version", "1.2.0", "--file", file]);
      assert.equal(base.code, 0, base.stderr);
      const baseId = Number(JSON.parse(base.stdout).release.id);
      const res = await publish([
        "--project",
        "desktop",
        "--version",
        "1.3.0",
        "--file",
        file,
        "--rollout-percentage",
        "12.5",
        "--rollout-schedule",
        "2030-01-01T00:00:00Z=50, 2030-01-02T00:00:00Z=100",
        "--rollout-tester-tag",
        "beta-testers",
      ]);
      assert.equal(res.code, 0, res.stderr);
      const answer = JSON.parse(res.stdout);
      assert.equal(answer.release.is_latest, false, "the previous latest stays latest");
      const rollout = await getRollout(store, project.id);
      assert.ok(rollout !== null, "a rollout was started");
      assert.equal(rollout.release_id, Number(answer.release.id));
      assert.equal(rollout.previous_id, baseId);
      assert.equal(rollout.percentage, 12.5);
      assert.deepEqual(rollout.schedule.map((step) => step.percentage), [50, 100]);
      assert.equal(rollout.tester_tag, "beta-testers");
    });

    await t.step("--rollout-* refusals are usage errors, nothing uploaded", async () => {
      const before = (await listReleasesByProject(store, project.id)).length;
      const args = ["--project", "desktop", "--version", "1.4.0", "--file", file];
      const cases: Array<[string[], RegExp]> = [
        [["--rollout-percentage", "150"], /from 0 to 100/],
        [["--rollout-percentage", "ten"], /from 0 to 100/],
        [["--rollout-tester-tag", "beta"], /need --rollout-percentage/],
        [["--rollout-percentage", "10", "--draft"], /cannot go with --draft/],
      ];
      for (const [extra, message] of cases) {
        const res = await publish([...args, ...extra]);
        assert.equal(res.code, 2, `${extra.join(" ")}: ${res.stderr}`);
        assert.match(res.stderr, message);
      }
      const bad = await publish([...args, "--rollout-percentage", "10", "--rollout-schedule", "x"]);
      assert.equal(bad.code, 11, bad.stderr);
      assert.match(bad.stderr, /TIME=PERCENT/);
      assert.equal((await listReleasesByProject(store, project.id)).length, before);
    });

    await t.step("refusals: a clear message and the exit code", async () => {
      const args = ["--project", "desktop", "--version", "2.0.0", "--file", file];
      const cases: Array<[string[], string, number, RegExp]> = [
        [["--project", "nope", "--version", "2", "--file", file], secret, 4, /project not found/],
        [args, clientKey, 3, /client API key/],
        [
          ["--project", "desktop", "--version", "2", "--file", "missing.zip"],
          secret,
          9,
          /cannot read/,
        ],
        [["--project", "desktop", "--file", file], secret, 2, /needs --project, --version/],
      ];
      for (const [argv, token, code, message] of cases) {
        const res = await publish(argv, token);
        assert.equal(res.code, code, `${argv.join(" ")}: ${res.stderr}`);
        assert.match(res.stderr, message);
        assert.equal(res.stdout, "");
      }
    });
  } finally {
    fx.close();
    await server.stop();
    await Deno.remove(work, { recursive: true });
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
