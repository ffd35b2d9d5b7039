/**
 * The reference client's differential download (client/differential.ts): from
 * the installed file of N to N+1 it fetches only the changed blocks (bytes
 * counted at the server), with multi-range requests, and the result is the
 * new file; an installed file that is corrupt falls back to the full,
 * verified download; so does a release without its block map yet. Through
 * the CLI too (`download --installed`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { downloadDifferentially } from "../client/differential.ts";
import { runBlockMapBuild } from "../src/blockmap/background.ts";
import {
  concatBytes,
  createTestApp,
  noise,
  seedKey,
  seedProject,
  seedRelease,
  sha256,
} from "./helpers.ts";
import { PROJECT_ROOT } from "./server_process.ts";

Deno.test("the reference client downloads only what changed", async (t) => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desktop" });
  // A changed part (of a new length) before a large unchanged part, which moves.
  const unchanged = noise(3_000_000, 7);
  const v0 = concatBytes(noise(200_000, 1), unchanged);
  // And a second change in the middle: two ranges to fetch.
  const v1 = concatBytes(
    noise(230_000, 2),
    unchanged.subarray(0, 1_500_000),
    noise(50_000, 3),
    unchanged.subarray(1_500_000),
  );
  await seedRelease(app, project.id, "1.0.0", v0, { filename: "App 1.0.0.bin" });
  const next = await seedRelease(app, project.id, "1.0.1", v1, { filename: "App 1.0.1.bin" });
  const { secret } = await seedKey(app);
  let sent = 0;
  const ranges: string[] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req, info) => {
      if (req.headers.has("range")) ranges.push(req.headers.get("range")!);
      const res = await app.app.fetch(req, { remoteAddr: info.remoteAddr });
      const body = res.body?.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            sent += chunk.byteLength;
            controller.enqueue(chunk);
          },
        }),
      );
      return new Response(body ?? null, { status: res.status, headers: res.headers });
    },
  );
  const baseUrl = `http://127.0.0.1:${server.addr.port}`;
  const dir = await Deno.makeTempDir({ prefix: "uds-client-delta-" });
  const installedFile = join(dir, "installed.bin");
  await Deno.writeFile(installedFile, v0);
  const release = await (await app.request(`/api/v1/releases/${next.id}`, secret)).json();
  const options = (target: string) => ({
    baseUrl,
    apiKey: secret,
    release: release.release,
    target: join(dir, target),
    installedFile,
    installedVersion: "1.0.0",
    project: "desktop",
  });

  try {
    await t.step("no block map yet: the whole file, verified", async () => {
      const result = await downloadDifferentially(options("early.bin"));
      assert.equal(result.differential, false);
      assert.match(result.fallback!, /block map not built yet/);
      assert.equal(sha256(await Deno.readFile(join(dir, "early.bin"))), next.checksum_sha256);
    });

    await runBlockMapBuild({ store: app.store, artifacts: app.artifacts, report: () => {} });

    await t.step(
      "differential: the changed blocks only, multi-range, SHA-256 checked",
      async () => {
        sent = 0;
        ranges.length = 0;
        const result = await downloadDifferentially(options("new.bin"));
        assert.equal(result.differential, true, result.fallback);
        assert.deepEqual(await Deno.readFile(join(dir, "new.bin")), v1);
        console.log(`full ${v1.byteLength} B; the service sent ${sent} B`);
        // The changed 230 KB, its neighbouring blocks and two block maps.
        assert.ok(sent < 400_000, `${sent} bytes sent`);
        assert.ok(result.receivedBytes >= 230_000 && result.receivedBytes < 330_000);
      },
    );

    await t.step("a corrupt installed file: the whole file, verified", async () => {
      const corrupt = v0.slice();
      corrupt.fill(0, 1_000_000, 1_100_000);
      await Deno.writeFile(installedFile, corrupt);
      const result = await downloadDifferentially(options("fallback.bin"));
      assert.equal(result.differential, false);
      assert.match(result.fallback!, /SHA-256 mismatch/);
      assert.deepEqual(await Deno.readFile(join(dir, "fallback.bin")), v1);
      await Deno.writeFile(installedFile, v0);
    });

    await t.step("the CLI: download --installed", async () => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          join(PROJECT_ROOT, "client/cli.ts"),
          "download",
          "--project",
          "desktop",
          "--current",
          "1.0.0",
          "--installed",
          installedFile,
          "--out",
          join(dir, "cli.bin"),
          "--state-dir",
          join(dir, "state"),
        ],
        clearEnv: true,
        env: { NO_COLOR: "1", UPDATE_API_KEY: secret, UPDATE_BASE_URL: baseUrl },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      assert.match(stdout, /differential: \d+ bytes received/);
      assert.deepEqual(await Deno.readFile(join(dir, "cli.bin")), v1);
    });
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
