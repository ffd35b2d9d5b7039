/**
 * The reference client's server-made patch (client/patch.ts): on the realistic
 * pair (bench/differential_pair.ts: a changed JavaScript package before a
 * large unchanged binary), the delta builder's zstd patch from the installed
 * release (src/deltas/artifact_patches.ts) costs at most half of what the
 * block-map path sends, byte counts by a proxy; a patch whose SHA-256 is not
 * the one announced falls back to the block map; a release without a patch
 * from the installed version takes the block map. The savings count once, in
 * the metrics and on the admin project and release pages.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildArtifacts, installAppBuilder } from "../bench/differential_pair.ts";
import { downloadDifferentially } from "../client/differential.ts";
import { runBlockMapBuild } from "../src/blockmap/background.ts";
import { listArtifactPatches } from "../src/artifact_records/artifact_patches.ts";
import { getReleaseDelivery } from "../src/stats/delivery.ts";
import { createAdminTestApp, signedInClient } from "./admin_helpers.ts";
import {
  buildDeltas,
  seedKey,
  seedProject,
  seedRelease,
  sha256,
  testMetrics,
  waitFor,
} from "./helpers.ts";

/** The value of an unlabelled series in the metrics text. */
async function series(name: string): Promise<number> {
  const line = (await testMetrics.render()).split("\n").find((l) => l.startsWith(`${name} `));
  return Number(line?.split(" ")[1] ?? 0);
}

Deno.test("the reference client takes the service's patch from its installed version", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "uds-client-patch-" });
  await using app = await createAdminTestApp();
  const [v0, v1] = await buildArtifacts(dir, await installAppBuilder());
  const project = await seedProject(app, { slug: "desktop" });
  await seedRelease(app, project.id, "1.0.0", v0, { filename: "App 1.0.0.tar" });
  const next = await seedRelease(app, project.id, "1.0.1", v1, { filename: "App 1.0.1.tar" });
  const { secret } = await seedKey(app);
  let sent = 0;
  let corrupt = false;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req, info) => {
      const res = await app.app.fetch(req, { remoteAddr: info.remoteAddr });
      const patch = new URL(req.url).pathname.startsWith("/feeds/patches/");
      let first = true;
      const body = res.body?.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            sent += chunk.byteLength;
            if (patch && corrupt && first) {
              chunk = chunk.slice();
              chunk[chunk.byteLength - 1] ^= 0xff;
            }
            first = false;
            controller.enqueue(chunk);
          },
        }),
      );
      return new Response(body ?? null, { status: res.status, headers: res.headers });
    },
  );
  const baseUrl = `http://127.0.0.1:${server.addr.port}`;
  const installedFile = join(dir, "installed.tar");
  await Deno.writeFile(installedFile, v0);
  const release = (await (await app.request(`/api/v1/releases/${next.id}`, secret)).json())
    .release;
  const options = (target: string, installId: string) => ({
    baseUrl,
    apiKey: secret,
    installId,
    release,
    target: join(dir, target),
    installedFile,
    installedVersion: "1.0.0",
    project: "desktop",
  });

  try {
    await runBlockMapBuild({ store: app.store, artifacts: app.artifacts, report: () => {} });

    await t.step("no patch built yet: the block map path", async () => {
      const result = await downloadDifferentially(options("early.tar", "install-early-0001"));
      assert.equal(result.method, "block map");
      assert.match(result.fallback!, /release patch not built yet/);
      assert.equal(sha256(await Deno.readFile(join(dir, "early.tar"))), next.checksum_sha256);
    });

    const run = await buildDeltas(app, join(dir, "work"));
    assert.equal(run.patches, 1);
    const [patch] = await listArtifactPatches(app.store, next.id);

    let blockMapBytes = 0;
    await t.step("the block-map path, as it is without patches", async () => {
      sent = 0;
      const result = await downloadDifferentially({
        ...options("blockmap.tar", "install-blockmap-0001"),
        patches: false,
      });
      assert.equal(result.method, "block map");
      blockMapBytes = sent;
    });

    await t.step(
      "the patch: at most half the block-map path's bytes, SHA-256 checked",
      async () => {
        const served = await series("uds_delivered_bytes_total");
        const full = await series("uds_full_download_equivalent_bytes_total");
        const before = await getReleaseDelivery(app.store, next.id);
        sent = 0;
        const result = await downloadDifferentially(options("new.tar", "install-patch-0001"));
        assert.equal(result.method, "patch", result.fallback);
        assert.deepEqual(await Deno.readFile(join(dir, "new.tar")), v1);
        console.log(
          `full ${v1.byteLength} B; block-map path ${blockMapBytes} B; patch ${sent} B ` +
            `(the patch file ${patch.size_bytes} B, built in ${patch.build_ms} ms)`,
        );
        assert.equal(result.receivedBytes, patch.size_bytes);
        assert.ok(sent <= blockMapBytes / 2, `${sent} B against ${blockMapBytes} B`);
        // The sums are written after the answer (src/stats/delivery.ts).
        await waitFor("the patch's sums", async () => {
          const now = await getReleaseDelivery(app.store, next.id);
          return now.served - before.served >= patch.size_bytes &&
            now.full - before.full >= v1.byteLength &&
            await series("uds_delivered_bytes_total") - served >= patch.size_bytes &&
            await series("uds_full_download_equivalent_bytes_total") - full >= v1.byteLength;
        });
        const after = await getReleaseDelivery(app.store, next.id);
        assert.equal(after.served - before.served, patch.size_bytes);
        assert.equal(after.full - before.full, v1.byteLength);
        assert.equal(await series("uds_delivered_bytes_total") - served, patch.size_bytes);
        assert.equal(
          await series("uds_full_download_equivalent_bytes_total") - full,
          v1.byteLength,
        );
      },
    );

    await t.step("a corrupt patch: refused, the block map path, counted once", async () => {
      const before = await getReleaseDelivery(app.store, next.id);
      corrupt = true;
      const result = await downloadDifferentially(options("fallback.tar", "install-corrupt-0001"));
      corrupt = false;
      assert.equal(result.method, "block map");
      assert.match(result.fallback!, /SHA-256 is not the one announced/);
      assert.deepEqual(await Deno.readFile(join(dir, "fallback.tar")), v1);
      await waitFor(
        "the fallback's sums",
        async () =>
          (await getReleaseDelivery(app.store, next.id)).full - before.full >= v1.byteLength,
      );
      const after = await getReleaseDelivery(app.store, next.id);
      assert.equal(
        after.full - before.full,
        v1.byteLength,
        "one update, one whole download's worth",
      );
    });

    await t.step("the admin project and release pages count the patch's savings", async () => {
      const admin = await signedInClient(app);
      const { html } = await admin.page("/admin/projects/desktop/releases");
      assert.match(html, /data-differential-savings/);
      assert.match(html, /Differential downloads saved \d/);
      const release = (await admin.page(`/admin/releases/${next.id}`)).html;
      assert.match(release, /data-delivery/);
      assert.match(release, /whole downloads would have cost/);
    });
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
