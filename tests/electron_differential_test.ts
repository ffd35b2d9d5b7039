/**
 * The real electron-updater (pinned below, tests/fixtures/electron_updater_differential.cjs:
 * NsisUpdater, not in its test mode, the installed installer at <cache dir>/installer.exe)
 * updating from N to N+1 of a realistic artifact differentially, against the real server
 * (the feed's file URL, the block maps the service made, multi-range answers), with the bytes
 * the server sent counted by a proxy in front of it. Anchor, in the same test: nginx serving the
 * same two files with app-builder's own block maps; the service may send at most twice what
 * nginx sends. In every storage mode: fs (the real server), fs behind nginx with x-accel, s3
 * stream and s3 redirect (radosgw; the store's own bytes counted by a TCP proxy in front of it). The artifact is an uncompressed tar: a changed part (two consecutive versions of
 * npm `yaml`'s JavaScript) before a large unchanged part (npm app-builder-bin's Linux binary),
 * which the changed part's new size moves.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { stringify } from "yaml";
import { Cleanup, npmInstallOnce, startNginx, which, xAccelServer } from "../bench/process.ts";
import { runBlockMapBuild } from "../src/blockmap/background.ts";
import { createS3Store } from "../src/storage/s3_store.ts";
import { appBuilderBlockMap, installAppBuilder } from "./app_builder.ts";
import { buildArtifacts } from "../bench/differential_pair.ts";
import { openDataDir } from "./data_dir_fixtures.ts";
import { createTestApp, seedKey, seedProject, seedRelease, waitFor } from "./helpers.ts";
import { cephMissing, startRgw } from "./rgw.ts";
import { makeDataTempDir, PROJECT_ROOT, removedAtEnd, startServer } from "./server_process.ts";

const ELECTRON_UPDATER = "electron-updater@6.8.10";
const CLIENT = join(PROJECT_ROOT, "tests", "fixtures", "electron_updater_differential.cjs");
const nginx = which("nginx");

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

/** A TCP proxy to `port` counting the bytes coming back (a store behind presigned URLs). */
function countingTcpProxy(port: number) {
  let bytes = 0;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const pipes: Promise<unknown>[] = [];
  const conns = new Set<Deno.Conn>();
  (async () => {
    for await (const client of listener) {
      conns.add(client);
      pipes.push((async () => {
        const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
        conns.add(upstream);
        const back = upstream.readable.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              bytes += chunk.byteLength;
              controller.enqueue(chunk);
            },
          }),
        );
        await Promise.allSettled([
          client.readable.pipeTo(upstream.writable),
          back.pipeTo(client.writable),
        ]);
      })());
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    bytes: () => bytes,
    close: async () => {
      listener.close();
      // Idle keep-alive connections would stay open until the store's own timeout.
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* already closed */ }
      }
      await Promise.allSettled(pipes);
    },
  };
}

/** A service under test: where its electron feed is, its key, and the bytes a store sent apart. */
interface Service {
  baseUrl: string;
  key: string;
  /** Bytes sent by the store itself (redirect mode), beside what the service sent. */
  storeBytes: () => number;
}

/** The two releases in an in-process app over `config`, its block maps built, served over HTTP. */
async function inProcessService(
  cleanup: Cleanup,
  artifacts: [Uint8Array, Uint8Array],
  names: string[],
  { overrides, store, storeBytes = () => 0, proxyOf }: {
    overrides: Partial<import("../src/lib/config.ts").Config>;
    store?: import("../src/storage/mod.ts").ArtifactStore;
    storeBytes?: () => number;
    /** Puts something (nginx) in front of the app's address. */
    proxyOf?: (appPort: number, artifactsDir: string) => Promise<string>;
  },
): Promise<Service> {
  const app = await createTestApp(overrides, { artifacts: store });
  cleanup.add(() => app.close());
  const project = await seedProject(app, { slug: "desktop" });
  for (const [i, bytes] of artifacts.entries()) {
    await seedRelease(app, project.id, `1.0.${i}`, bytes, { filename: names[i] });
  }
  const { secret } = await seedKey(app);
  const built = await runBlockMapBuild({
    store: app.store,
    artifacts: app.artifacts,
    report: () => {},
  });
  assert.equal(built.built, 2);
  const served = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request, info) => app.app.fetch(request, info),
  );
  cleanup.add(() => served.shutdown());
  const direct = `http://127.0.0.1:${served.addr.port}`;
  const baseUrl = proxyOf === undefined
    ? direct
    : await proxyOf(served.addr.port, app.config.artifactsDir);
  return { baseUrl, key: secret, storeBytes };
}

Deno.test({
  name: "electron-updater downloads only what changed, in every storage mode, within 2x of nginx",
  ignore: nginx === null,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const root = await makeDataTempDir("test-electron-differential");
    await using _removed = removedAtEnd(root);
    const cleanup = new Cleanup();
    try {
      const modules = join(await npmInstallOnce(ELECTRON_UPDATER), "node_modules");
      const appBuilder = await installAppBuilder();
      const [v0, v1] = await buildArtifacts(root, appBuilder);
      const names = ["App-Setup-1.0.0.exe", "App-Setup-1.0.1.exe"];

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
      const toNginx = countingProxy(web.baseUrl);
      cleanup.add(toNginx.close);
      let nginxBytes = 0;
      await t.step("nginx with app-builder's block maps: differential", async () => {
        const result = await update({
          modules,
          work: join(root, "client-nginx"),
          feedUrl: toNginx.baseUrl,
          installed: v0,
        });
        await assertDifferential(result, v1);
        nginxBytes = toNginx.bytes();
      });
      const ratio = (n: number) => `${(100 * n / v1.byteLength).toFixed(2)}%`;
      console.log(`file ${v1.byteLength} B; nginx sent ${nginxBytes} B (${ratio(nginxBytes)})`);

      /** Updates from `service` through a counting proxy; asserts the bound; the bytes sent. */
      const updateFrom = async (mode: string, service: Service) => {
        const proxy = countingProxy(service.baseUrl);
        cleanup.add(proxy.close);
        const result = await update({
          modules,
          work: join(root, `client-${mode}`),
          feedUrl: `${proxy.baseUrl}/feeds/electron/desktop`,
          key: service.key,
          installed: v0,
        });
        await assertDifferential(result, v1);
        assert.ok(
          proxy.requests.some((line) =>
            /GET .*1\.0\.1\/App-Setup-1\.0\.1\.exe bytes=.*,/.test(line)
          ),
          `a multi-range request: ${proxy.requests.join("\n")}`,
        );
        const sent = proxy.bytes() + service.storeBytes();
        console.log(
          `${mode}: the service sent ${sent} B (${ratio(sent)}), ` +
            `service/nginx ${(sent / nginxBytes).toFixed(2)}`,
        );
        assert.ok(sent <= 2 * nginxBytes, `${sent} > 2 x ${nginxBytes}`);
        assert.ok(sent < v1.byteLength / 10, "far less than the whole file");
      };

      await t.step("fs, stream: the real server, block maps from its background work", async () => {
        const dataDir = join(root, "service");
        const fx = await openDataDir(dataDir);
        const project = await fx.project({ name: "Desktop", slug: "desktop" });
        await fx.release(project.id, "1.0.0", v0, { filename: names[0] });
        await fx.release(project.id, "1.0.1", v1, { filename: names[1] });
        const { secret: key } = await fx.key({});
        fx.close();
        const server = await startServer(dataDir);
        cleanup.add(async () => {
          await server[Symbol.asyncDispose]();
        });
        for (const [i, name] of names.entries()) {
          const url = `${server.baseUrl}/feeds/electron/desktop/files/1.0.${i}/${name}.blockmap`;
          await waitFor(`the block map of ${name}`, async () => {
            const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
            await res.body?.cancel();
            return res.status === 200;
          }, 120_000);
        }
        await updateFrom("fs", { baseUrl: server.baseUrl, key, storeBytes: () => 0 });
      });

      await t.step("fs, x-accel: nginx answers the ranges", async () => {
        const secret = "x-accel-secret-of-the-test";
        const service = await inProcessService(cleanup, [v0, v1], names, {
          overrides: { downloadMode: "x-accel", xAccelSecret: secret },
          proxyOf: async (appPort, artifactsDir) =>
            (await startNginx(
              nginx!,
              artifactsDir,
              join(root, "nginx-x-accel"),
              cleanup,
              xAccelServer(appPort, artifactsDir, secret),
            )).baseUrl,
        });
        await updateFrom("x-accel", service);
      });

      if (cephMissing === undefined) {
        const rgw = await startRgw();
        cleanup.add(() => rgw.stop());
        for (const downloadMode of ["stream", "redirect"] as const) {
          await t.step(`s3, ${downloadMode}`, async () => {
            const storeProxy = countingTcpProxy(Number(new URL(rgw.endpoint).port));
            cleanup.add(storeProxy.close);
            const bucket = await rgw.bucket();
            const direct = await createS3Store(bucket, 64 * 1024 * 1024);
            // The service reads the bucket directly; the URLs it hands out go through the proxy.
            const proxied = await createS3Store(
              { ...bucket, endpoint: `http://127.0.0.1:${storeProxy.port}` },
              64 * 1024 * 1024,
            );
            const store = { ...direct, presignGet: proxied.presignGet };
            const service = await inProcessService(cleanup, [v0, v1], names, {
              overrides: { storage: "s3", downloadMode },
              store,
            });
            // Stream: the store's bytes reach the client through the service (counted there).
            const before = storeProxy.bytes();
            await updateFrom(`s3 ${downloadMode}`, {
              ...service,
              storeBytes: () => downloadMode === "redirect" ? storeProxy.bytes() - before : 0,
            });
          });
        }
      }
    } finally {
      await cleanup.run();
    }
  },
});
