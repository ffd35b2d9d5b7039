/**
 * The reference client's server-made patch in each download mode that hands
 * the bytes to someone else (docs/client-api.md "Server-made patches"):
 * through nginx with X-Accel-Redirect (its internal location passes the patch
 * headers on), and as a redirect to S3 (the client reads them from the 302).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Cleanup, startNginx, which, xAccelServer } from "../bench/process.ts";
import { applyServerPatch } from "../client/patch.ts";
import { createS3Store } from "../src/storage/s3_store.ts";
import { listArtifactPatches } from "../src/artifact_records/artifact_patches.ts";
import { buildDeltas, createTestApp, seedKey, seedProject, seedRelease } from "./helpers.ts";
import type { TestApp } from "./helpers.ts";
import { rgwTest } from "./rgw.ts";

const nginx = which("nginx");
const zstd = which("zstd");

/** Two versions of a file that differ in a few places. */
function versions(): [Uint8Array, Uint8Array] {
  const old = Uint8Array.from({ length: 400_000 }, (_, i) => (i * 131 + (i >> 9)) & 0xff);
  const next = old.slice();
  for (let i = 1_000; i < next.length; i += 50_000) next[i] ^= 0x5a;
  return [old, next];
}

/**
 * Seeds both versions, builds the patch; what the client needs to ask for it, and `patch`: the
 * client's patch from the installed 1.0.0 through the server at `baseUrl` into `target`.
 */
async function seeded(app: TestApp, dir: string) {
  const [old, next] = versions();
  const project = await seedProject(app, { slug: "desk" });
  await seedRelease(app, project.id, "1.0.0", old, { filename: "Desk 1.0.0.tar" });
  const latest = await seedRelease(app, project.id, "1.0.1", next, { filename: "Desk 1.0.1.tar" });
  const run = await buildDeltas(app, join(dir, "work"));
  assert.equal(run.patches, 1);
  assert.equal((await listArtifactPatches(app.store, latest.id)).length, 1);
  const { secret } = await seedKey(app);
  const installedFile = join(dir, "installed.tar");
  await Deno.writeFile(installedFile, old);
  const release = (await (await app.request(`/api/v1/releases/${latest.id}`, secret)).json())
    .release;
  const patch = (baseUrl: string, target: string) =>
    applyServerPatch({
      baseUrl,
      apiKey: secret,
      release,
      target,
      installedFile,
      installedVersion: "1.0.0",
    });
  return { secret, release, next, patch };
}

Deno.test({
  name: "server-made patches through nginx (x-accel): the patch headers reach the client",
  ignore: nginx === null || zstd === null,
  async fn() {
    const xAccelSecret = "test-x-accel-secret-0123456789";
    await using app = await createTestApp({ downloadMode: "x-accel", xAccelSecret });
    const cleanup = new Cleanup();
    const served = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request, info) => app.app.fetch(request, { remoteAddr: info.remoteAddr }),
    );
    const dir = await Deno.makeTempDir({ prefix: "uds-patch-accel-" });
    try {
      const proxy = await startNginx(
        nginx!,
        dir,
        dir,
        cleanup,
        xAccelServer(served.addr.port, app.config.artifactsDir, xAccelSecret),
      );
      const { next, patch } = await seeded(app, dir);
      const target = join(dir, "new.tar");
      const received = await patch(proxy.baseUrl, target);
      assert.ok(received > 0 && received < next.byteLength / 10, `${received} B`);
      assert.deepEqual(await Deno.readFile(target), next);
    } finally {
      await cleanup.run();
      await served.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

rgwTest(
  "server-made patches from S3 (redirect): the client reads the headers from the 302",
  async (_t, rgw) => {
    if (zstd === null) return;
    const artifacts = await createS3Store(await rgw.bucket(), 64 * 1024 * 1024);
    await using app = await createTestApp({ storage: "s3", downloadMode: "redirect" }, {
      artifacts,
    });
    const served = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request, info) => app.app.fetch(request, { remoteAddr: info.remoteAddr }),
    );
    const dir = await Deno.makeTempDir({ prefix: "uds-patch-s3-" });
    try {
      const { secret, release, next, patch } = await seeded(app, dir);
      const baseUrl = `http://127.0.0.1:${served.addr.port}`;
      const answer = await fetch(`${baseUrl}/feeds/patches/${release.id}/1.0.0`, {
        headers: { authorization: `Bearer ${secret}` },
        redirect: "manual",
      });
      await answer.body?.cancel();
      assert.equal(answer.status, 302);
      assert.match(answer.headers.get("x-patch-sha256") ?? "", /^[0-9a-f]{64}$/);
      const target = join(dir, "new.tar");
      const received = await patch(baseUrl, target);
      assert.ok(received > 0 && received < next.byteLength / 10, `${received} B`);
      assert.deepEqual(await Deno.readFile(target), next);
    } finally {
      await served.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
