/**
 * Server-made patches of whole artifacts (src/deltas/artifact_patches.ts,
 * docs/feeds.md "Server-made patches"): built by the delta builder's run
 * to the project's newest release from its newest older releases (the
 * project's deltas kept),
 * within the limits (a build past them fails, is reported and leaves no
 * patch), kept by the storage sweep, and served at
 * /feeds/patches/{releaseId}/{installedVersion} behind the download's key
 * checks with the patch's own SHA-256 and its base's in headers.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runVelopackDeltas } from "../src/deltas/background.ts";
import { DEFAULT_DELTA_LIMITS } from "../src/deltas/tools.ts";
import { listArtifactPatches } from "../src/artifact_records/artifact_patches.ts";
import { listStorageKeys } from "../src/releases/releases.ts";
import type { Release } from "../src/releases/types.ts";
import { setVelopackSettings } from "../src/velopack/settings.ts";
import {
  buildDeltas,
  concatBytes,
  createTestApp,
  noise,
  seedKey,
  seedProject,
  seedRelease,
  sha256,
} from "./helpers.ts";

Deno.test("server-made patches: built, bounded, served behind the key's checks", async (t) => {
  await using app = await createTestApp();
  const work = await Deno.makeTempDir({ prefix: "uds-patches-" });
  const project = await seedProject(app, { slug: "desktop" });
  const other = await seedProject(app, { slug: "other" });
  const body = noise(400_000, 9);
  const versions = ["1.0.0", "1.1.0", "1.2.0", "1.3.0"];
  const releases: Array<{ bytes: Uint8Array; release: Release }> = [];
  for (const [i, version] of versions.entries()) {
    const file = concatBytes(noise(10_000, i + 1), body);
    releases.push({
      bytes: file,
      release: await seedRelease(app, project.id, version, file, {
        filename: `App ${version}.bin`,
      }),
    });
  }
  const newest = releases[3].release;
  const run = (limits = DEFAULT_DELTA_LIMITS) => {
    const reports: string[] = [];
    return runVelopackDeltas({
      store: app.store,
      artifacts: app.artifacts,
      report: (_level, message) => reports.push(message),
      workDir: join(work, "deltas"),
      limits,
    }).then((result) => ({ ...result, reports }));
  };
  const { secret } = await seedKey(app);
  const patchPath = `/feeds/patches/${newest.id}/1.2.0`;

  try {
    await t.step("before a build: 404 release patch not built yet", async () => {
      const res = await app.request(patchPath, secret);
      assert.equal(res.status, 404);
      assert.deepEqual(await res.json(), { error: "release patch not built yet" });
    });

    await t.step("a build past its memory limit fails, is reported, leaves no patch", async () => {
      const result = await run({ ...DEFAULT_DELTA_LIMITS, memoryBytes: 4 * 1024 * 1024 });
      assert.equal(result.patches, 0);
      assert.ok(result.failed > 0);
      assert.ok(result.reports.includes("patch: build failed"), result.reports.join(", "));
      assert.deepEqual(await listArtifactPatches(app.store, newest.id), []);
    });

    await t.step("from the newest older releases, as many as the project keeps", async () => {
      await setVelopackSettings(app.store, project.id, { deltas_kept: 2 });
      const result = await run();
      assert.equal(result.failed, 0);
      // To the newest release only (1.3.0), from 1.2.0 and 1.1.0.
      assert.equal(result.patches, 2);
      assert.deepEqual(await listArtifactPatches(app.store, releases[2].release.id), []);
      const patches = await listArtifactPatches(app.store, newest.id);
      assert.deepEqual(patches.map((p) => p.from_version).sort(), ["1.1.0", "1.2.0"]);
      for (const patch of patches) assert.ok(patch.size_bytes < 20_000, `${patch.size_bytes} B`);
      const kept = await listStorageKeys(app.store);
      for (const patch of patches) assert.ok(kept.has(patch.storage_key));
      assert.equal((await run()).patches, 0, "a second run builds nothing again");
    });

    await t.step("the patch, its SHA-256 and its base's in headers; HEAD", async () => {
      const [patch] = (await listArtifactPatches(app.store, newest.id))
        .filter((p) => p.from_version === "1.2.0");
      const res = await app.request(patchPath, secret);
      assert.equal(res.status, 200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      assert.equal(bytes.byteLength, patch.size_bytes);
      assert.equal(res.headers.get("x-patch-sha256"), sha256(bytes));
      assert.equal(res.headers.get("x-patch-base-sha256"), sha256(releases[2].bytes));
      const head = await app.request(patchPath, secret, { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), String(patch.size_bytes));
      // zstd makes the release's file from the installed one and the patch.
      const dir = await Deno.makeTempDir({ dir: work });
      await Deno.writeFile(join(dir, "old"), releases[2].bytes);
      await Deno.writeFile(join(dir, "p.zst"), bytes);
      const out = await new Deno.Command("zstd", {
        args: [
          "-d",
          "-q",
          `--patch-from=${join(dir, "old")}`,
          "-o",
          join(dir, "new"),
          join(dir, "p.zst"),
        ],
      }).output();
      assert.ok(out.success);
      assert.equal(sha256(await Deno.readFile(join(dir, "new"))), newest.checksum_sha256);
    });

    await t.step("a version with no patch (too old, or unknown): 404", async () => {
      for (const from of ["1.0.0", "9.9.9"]) {
        const res = await app.request(`/feeds/patches/${newest.id}/${from}`, secret);
        assert.equal(res.status, 404);
        await res.body?.cancel();
      }
    });

    await t.step(
      "the download's key checks: none, no download permission, out of scope",
      async () => {
        const none = await app.request(patchPath);
        assert.equal(none.status, 401);
        await none.body?.cancel();
        const noDownload = await seedKey(app, { can_download: false });
        const refused = await app.request(patchPath, noDownload.secret);
        assert.equal(refused.status, 403);
        await refused.body?.cancel();
        const scoped = await seedKey(app, {
          scope_mode: "project_allow_list",
          project_ids: [other.id],
        });
        const hidden = await app.request(patchPath, scoped.secret);
        assert.equal(hidden.status, 404);
        await hidden.body?.cancel();
        const post = await app.request(patchPath, secret, { method: "POST" });
        assert.equal(post.status, 405);
        await post.body?.cancel();
      },
    );
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("server-made patches: a version uploaded twice is patched from its newest upload", async () => {
  await using app = await createTestApp();
  const work = await Deno.makeTempDir({ prefix: "uds-patches-dup-" });
  try {
    const project = await seedProject(app, { slug: "desktop" });
    const body = noise(200_000, 5);
    const first = concatBytes(noise(5_000, 1), body);
    const second = concatBytes(noise(5_000, 2), body);
    await seedRelease(app, project.id, "1.0.0", first, { filename: "App.bin" });
    await seedRelease(app, project.id, "1.0.0", second, { filename: "App.bin" });
    const next = await seedRelease(app, project.id, "1.1.0", concatBytes(noise(5_000, 3), body), {
      filename: "App.bin",
    });
    const run = await buildDeltas(app, join(work, "deltas"));
    assert.equal(run.patches, 2);
    const { secret } = await seedKey(app);
    const res = await app.request(`/feeds/patches/${next.id}/1.0.0`, secret);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(res.headers.get("x-patch-base-sha256"), sha256(second));
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
