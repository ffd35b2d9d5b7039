/**
 * The real electron-updater (pinned below, tests/fixtures/electron_updater_differential.cjs:
 * NsisUpdater, not in its test mode, the installed installer at <cache dir>/installer.exe)
 * updating from N to N+1 of a realistic artifact differentially, against the real server
 * (the feed's file URL, the block maps the service made, multi-range answers), with the bytes
 * the server sent counted by a proxy in front of it. Anchor, in the same test: nginx serving the
 * same two files with app-builder's own block maps; the service may send at most twice what
 * nginx sends. The artifact is an uncompressed tar: a changed part (two consecutive versions of
 * npm `yaml`'s JavaScript) before a large unchanged part (npm app-builder-bin's Linux binary),
 * which the changed part's new size moves.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { stringify } from "yaml";
import { Cleanup, startNginx, which } from "../bench/process.ts";
import { appBuilderBlockMap, installAppBuilder } from "./app_builder.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { waitFor } from "./helpers.ts";
import { makeDataTempDir, PROJECT_ROOT, removedAtEnd, startServer } from "./server_process.ts";

const ELECTRON_UPDATER = "electron-updater@6.8.10";
/** The changed part: two consecutive versions of one package's JavaScript. */
const CHANGED = ["yaml@2.8.0", "yaml@2.8.1"];
const CLIENT = join(PROJECT_ROOT, "tests", "fixtures", "electron_updater_differential.cjs");
const nginx = which("nginx");

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

/** The two artifacts (N, N+1): tar of `package/` (the JS of one version) then `resources.bin`. */
async function buildArtifacts(root: string, binary: string): Promise<[Uint8Array, Uint8Array]> {
  const packs = join(root, "packs");
  await Deno.mkdir(packs, { recursive: true });
  await run("npm", ["pack", "--silent", "--pack-destination", packs, ...CHANGED]);
  const artifacts: Uint8Array[] = [];
  for (const [i, spec] of CHANGED.entries()) {
    const dir = join(root, `build-${i}`);
    await Deno.mkdir(dir, { recursive: true });
    const [name, version] = spec.split("@");
    await run("tar", ["-xzf", join(packs, `${name}-${version}.tgz`), "-C", dir]);
    await Deno.copyFile(binary, join(dir, "resources.bin"));
    const out = join(root, `artifact-${i}.tar`);
    await run("tar", [
      "-cf",
      out,
      "--sort=name",
      "--mtime=@0",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "-C",
      dir,
      "package",
      "resources.bin",
    ]);
    artifacts.push(await Deno.readFile(out));
  }
  return [artifacts[0], artifacts[1]];
}

/** An HTTP proxy to `upstream` counting the bytes of every answer's body. */
function countingProxy(upstream: string) {
  let bytes = 0;
  const requests: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const url = new URL(req.url);
    requests.push(`${req.method} ${url.pathname} ${req.headers.get("range") ?? ""}`.trim());
    const headers = new Headers(req.headers);
    headers.delete("host");
    const res = await fetch(upstream + url.pathname + url.search, {
      method: req.method,
      headers,
      redirect: "manual",
    });
    const counted = res.body?.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytes += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted ?? null, { status: res.status, headers: res.headers });
  });
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    bytes: () => bytes,
    requests,
    close: () => server.shutdown(),
  };
}

interface UpdaterResult {
  version?: string;
  downloaded?: string[];
  log: string[];
  error?: { code: string | null; message: string };
}

/** Runs the updater of an app at 1.0.0 whose installer is `installed`. */
async function update(
  options: { modules: string; work: string; feedUrl: string; key?: string; installed: Uint8Array },
): Promise<UpdaterResult> {
  const cache = join(options.work, "cache", "test-app-updater");
  await Deno.mkdir(cache, { recursive: true });
  await Deno.writeFile(join(cache, "installer.exe"), options.installed);
  const out = await new Deno.Command("node", {
    args: [CLIENT],
    env: {
      NODE_PATH: options.modules,
      FEED_URL: options.feedUrl,
      API_KEY: options.key ?? "",
      WORK_DIR: options.work,
      APP_VERSION: "1.0.0",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
}

/** Asserts an update to 1.0.1 that took the differential path and produced `expected`. */
async function assertDifferential(result: UpdaterResult, expected: Uint8Array) {
  assert.equal(result.error, undefined, JSON.stringify(result, null, 1));
  assert.equal(result.version, "1.0.1");
  const log = result.log.join("\n");
  assert.match(log, /Download block maps/);
  assert.match(log, /Full: .*, To download: /, log);
  assert.doesNotMatch(log, /Cannot download differentially|fallback to full download/, log);
  const file = await Deno.readFile(result.downloaded![0]);
  assert.equal(file.byteLength, expected.byteLength);
  assert.equal(sha512(file), sha512(expected), "electron-updater checked it; so does the test");
}

function sha512(bytes: Uint8Array): string {
  return createHash("sha512").update(bytes).digest("base64");
}

Deno.test({
  name: "electron-updater downloads only what changed (fs), within 2x of nginx",
  ignore: nginx === null,
  async fn(t) {
    const root = await makeDataTempDir("test-electron-differential");
    await using _removed = removedAtEnd(root);
    const cleanup = new Cleanup();
    try {
      const npm = join(root, "npm");
      await Deno.mkdir(npm, { recursive: true });
      await run("npm", ["install", "--no-audit", "--no-fund", "--prefix", npm, ELECTRON_UPDATER]);
      const modules = join(npm, "node_modules");
      const appBuilder = await installAppBuilder(root);
      const [v0, v1] = await buildArtifacts(root, appBuilder);
      const names = ["App-Setup-1.0.0.exe", "App-Setup-1.0.1.exe"];

      // The service, with both releases; their block maps come from its background work.
      const dataDir = join(root, "service");
      const fx = await openDataDir(dataDir);
      const project = await fx.project({ name: "Desktop", slug: "desktop" });
      await fx.release(project.id, "1.0.0", v0, { filename: names[0] });
      await fx.release(project.id, "1.0.1", v1, { filename: names[1] });
      const { secret: key } = await fx.key({});
      fx.close();
      await using server = await startServer(dataDir);
      for (const [i, name] of names.entries()) {
        const url = `${server.baseUrl}/feeds/electron/desktop/files/1.0.${i}/${name}.blockmap`;
        await waitFor(`the block map of ${name}`, async () => {
          const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
          await res.body?.cancel();
          return res.status === 200;
        }, 120_000);
      }

      // The anchor: nginx serving the same files with app-builder's block maps.
      const static_ = join(root, "static");
      await Deno.mkdir(static_);
      for (const [i, bytes] of [v0, v1].entries()) {
        await Deno.writeFile(join(static_, names[i]), bytes);
        await appBuilderBlockMap(appBuilder, join(static_, names[i]));
      }
      const feed = stringify({
        version: "1.0.1",
        files: [{ url: names[1], sha512: sha512(v1), size: v1.byteLength }],
        path: names[1],
        sha512: sha512(v1),
        releaseDate: new Date().toISOString(),
      });
      await Deno.writeTextFile(join(static_, "latest-linux.yml"), feed);
      const web = await startNginx(nginx!, static_, join(root, "nginx"), cleanup);

      const toService = countingProxy(server.baseUrl);
      cleanup.add(toService.close);
      const toNginx = countingProxy(web.baseUrl);
      cleanup.add(toNginx.close);

      let serviceBytes = 0;
      await t.step("from the service: differential, SHA-512 checked", async () => {
        const result = await update({
          modules,
          work: join(root, "client-service"),
          feedUrl: `${toService.baseUrl}/feeds/electron/desktop`,
          key,
          installed: v0,
        });
        await assertDifferential(result, v1);
        serviceBytes = toService.bytes();
        assert.ok(
          toService.requests.some((line) =>
            /GET .*1\.0\.1\/App-Setup-1\.0\.1\.exe bytes=.*,/.test(line)
          ),
          `a multi-range request: ${toService.requests.join("\n")}`,
        );
      });

      let nginxBytes = 0;
      await t.step("from nginx with app-builder's block maps: differential", async () => {
        const result = await update({
          modules,
          work: join(root, "client-nginx"),
          feedUrl: toNginx.baseUrl,
          installed: v0,
        });
        await assertDifferential(result, v1);
        nginxBytes = toNginx.bytes();
      });

      await t.step("the service sends at most 2x what nginx sends", () => {
        const ratio = (n: number) => `${(100 * n / v1.byteLength).toFixed(2)}%`;
        console.log(
          `file ${v1.byteLength} B; service sent ${serviceBytes} B (${ratio(serviceBytes)}), ` +
            `nginx ${nginxBytes} B (${ratio(nginxBytes)}), ` +
            `service/nginx ${(serviceBytes / nginxBytes).toFixed(2)}`,
        );
        assert.ok(serviceBytes > 0 && nginxBytes > 0);
        assert.ok(serviceBytes <= 2 * nginxBytes, `${serviceBytes} > 2 x ${nginxBytes}`);
        assert.ok(serviceBytes < v1.byteLength / 10, "far less than the whole file");
      });
    } finally {
      await cleanup.run();
    }
  },
});
