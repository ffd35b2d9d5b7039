/**
 * The delta builder's bounds (src/deltas/, docs/feeds.md "Server-made
 * deltas"): a missing program skips builds but not package records, and the
 * builds wait for a later run; a `.nuspec` zip bomb is given up early; a
 * package with a symbolic link or an entry outside it builds no delta; a
 * deleted release takes its deltas and patches along; what a crashed build
 * left is cleared.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { readNuspec } from "../src/deltas/nupkg.ts";
import { DEFAULT_DELTA_LIMITS } from "../src/deltas/tools.ts";
import { buildVelopackDelta } from "../src/deltas/velopack_delta.ts";
import { clearStaleWork } from "../src/deltas/work.ts";
import { listArtifactPatches, putArtifactPatch } from "../src/artifact_records/artifact_patches.ts";
import { deleteReleaseRecord } from "../src/lifecycle/delete_records.ts";
import {
  getVelopackPackage,
  listVelopackDeltas,
  putVelopackDelta,
} from "../src/artifact_records/velopack.ts";
import { buildDeltas, createTestApp, seedProject, seedRelease, writeNupkgTree } from "./helpers.ts";

async function zipDir(dir: string, out: string, args: string[] = []): Promise<Uint8Array> {
  const zipped = await new Deno.Command("zip", {
    args: ["-q", "-r", "-X", ...args, out, "."],
    cwd: dir,
  }).output();
  assert.ok(zipped.success, new TextDecoder().decode(zipped.stderr));
  return await Deno.readFile(out);
}

async function nupkg(work: string, version: string): Promise<Uint8Array> {
  const dir = await writeNupkgTree(work, version);
  return await zipDir(dir, join(work, `DeskApp-${version}-full.nupkg`));
}

/** A zip of one deflated entry whose central directory declares `declared` bytes unpacked. */
function oneEntryZip(name: string, deflated: Uint8Array, declared: number): Uint8Array {
  const nameBytes = new TextEncoder().encode(name);
  const local = new Uint8Array(30 + nameBytes.length);
  const lv = new DataView(local.buffer);
  lv.setUint32(0, 0x04034b50, true);
  lv.setUint16(4, 20, true);
  lv.setUint16(8, 8, true);
  lv.setUint32(18, deflated.length, true);
  lv.setUint32(22, declared, true);
  lv.setUint16(26, nameBytes.length, true);
  local.set(nameBytes, 30);
  const central = new Uint8Array(46 + nameBytes.length);
  const cv = new DataView(central.buffer);
  cv.setUint32(0, 0x02014b50, true);
  cv.setUint16(4, 20, true);
  cv.setUint16(6, 20, true);
  cv.setUint16(10, 8, true);
  cv.setUint32(20, deflated.length, true);
  cv.setUint32(24, declared, true);
  cv.setUint16(28, nameBytes.length, true);
  cv.setUint32(42, 0, true);
  central.set(nameBytes, 46);
  const end = new Uint8Array(22);
  const ev = new DataView(end.buffer);
  const centralAt = local.length + deflated.length;
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, 1, true);
  ev.setUint16(10, 1, true);
  ev.setUint32(12, central.length, true);
  ev.setUint32(16, centralAt, true);
  const out = new Uint8Array(centralAt + central.length + end.length);
  out.set(local, 0);
  out.set(deflated, local.length);
  out.set(central, centralAt);
  out.set(end, centralAt + central.length);
  return out;
}

/** `total` zero bytes, raw-deflated (a few hundred KiB for hundreds of MiB). */
async function deflatedZeros(total: number): Promise<Uint8Array> {
  const chunk = new Uint8Array(1024 * 1024);
  let left = total;
  const source = new ReadableStream<BufferSource>({
    pull(controller) {
      if (left <= 0) return controller.close();
      const n = Math.min(left, chunk.length);
      left -= n;
      controller.enqueue(chunk.subarray(0, n));
    },
  });
  const compressed = source.pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(compressed).arrayBuffer());
}

Deno.test("a .nuspec zip bomb is given up early, whatever size the zip declares", async () => {
  const work = await Deno.makeTempDir({ prefix: "uds-nuspec-bomb-" });
  try {
    const bomb = await deflatedZeros(300 * 1024 * 1024);
    const lying = join(work, "lying.nupkg");
    await Deno.writeFile(lying, oneEntryZip("App.nuspec", bomb, 200));
    const declared = join(work, "declared.nupkg");
    await Deno.writeFile(declared, oneEntryZip("App.nuspec", bomb, 300 * 1024 * 1024));
    const before = Deno.memoryUsage().rss;
    const started = performance.now();
    assert.deepEqual(await readNuspec(declared), { problem: "the .nuspec is too large" });
    assert.deepEqual(await readNuspec(lying), { problem: "the .nuspec is too large" });
    const grown = Deno.memoryUsage().rss - before;
    // Inflating the whole 300 MiB took over 300 MB and a second or more.
    assert.ok(grown < 100 * 1024 * 1024, `RSS grew ${grown} bytes`);
    assert.ok(performance.now() - started < 5_000);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("a missing program skips the builds, not the package records, until a later run", async (t) => {
  await using app = await createTestApp();
  const work = await Deno.makeTempDir({ prefix: "uds-delta-missing-" });
  const path = Deno.env.get("PATH")!;
  try {
    const first = await seedProject(app, { slug: "first" });
    const second = await seedProject(app, { slug: "second" });
    const v1 = await seedRelease(app, first.id, "1.0.0", await nupkg(work, "1.0.0"), {
      filename: "DeskApp-1.0.0-full.nupkg",
    });
    const v2 = await seedRelease(app, first.id, "1.0.1", await nupkg(work, "1.0.1"), {
      filename: "DeskApp-1.0.1-full.nupkg",
    });
    await seedRelease(app, second.id, "1.0.0", new Uint8Array(50_000).fill(1), {
      filename: "App.bin",
    });
    await seedRelease(app, second.id, "1.1.0", new Uint8Array(50_000).fill(2), {
      filename: "App.bin",
    });
    const w1 = await seedRelease(app, second.id, "2.0.0", await nupkg(work, "2.0.0"), {
      filename: "Other-2.0.0-full.nupkg",
    });
    const run = () => buildDeltas(app, join(work, "deltas"));

    await t.step("no program at all: every package recorded, no build failed", async () => {
      const empty = join(work, "empty");
      await Deno.mkdir(empty);
      Deno.env.set("PATH", empty);
      try {
        const result = await run();
        assert.equal(result.outcome, "done");
        assert.equal(result.packages, 3);
        assert.equal(result.failed, 0);
        assert.ok(result.missing?.includes("unzip"), String(result.missing));
        assert.equal(result.retryAfterId, v2.id - 1);
        for (const release of [v1, v2, w1]) {
          assert.notEqual(await getVelopackPackage(app.store, release.id), null);
        }
      } finally {
        Deno.env.set("PATH", path);
      }
    });

    await t.step("prlimit without zstd: a missing program too, not a failed build", async () => {
      const onlyPrlimit = join(work, "prlimit-only");
      await Deno.mkdir(onlyPrlimit);
      for (const program of ["prlimit", "unzip", "zip"]) {
        const found = await new Deno.Command("sh", { args: ["-c", `command -v ${program}`] })
          .output();
        await Deno.symlink(
          new TextDecoder().decode(found.stdout).trim(),
          join(onlyPrlimit, program),
        );
      }
      Deno.env.set("PATH", onlyPrlimit);
      try {
        const result = await run();
        assert.equal(result.failed, 0);
        assert.ok(result.missing?.includes("prlimit: exit 127"), String(result.missing));
        assert.equal(result.retryAfterId, v2.id - 1);
      } finally {
        Deno.env.set("PATH", path);
      }
    });

    await t.step("with the programs back, a later run builds what was skipped", async () => {
      const result = await run();
      assert.equal(result.missing, null);
      assert.equal(result.failed, 0);
      assert.equal(result.deltas, 1);
      assert.equal((await listVelopackDeltas(app.store, v2.id)).length, 1);
    });
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("a package with a symbolic link or an entry outside it builds no delta", async (t) => {
  const work = await Deno.makeTempDir({ prefix: "uds-delta-links-" });
  try {
    const secret = join(work, "secret.txt");
    await Deno.writeTextFile(secret, "server-only\n".repeat(200));
    const build = (oldPackage: string, newPackage: string, name: string) =>
      buildVelopackDelta({
        oldPackage,
        newPackage,
        workDir: join(work, name),
        limits: DEFAULT_DELTA_LIMITS,
      });
    const newDir = join(work, "new");
    await Deno.mkdir(join(newDir, "lib", "app"), { recursive: true });
    await Deno.writeTextFile(join(newDir, "lib", "app", "secret.txt"), "changed\n".repeat(200));
    const newPackage = join(work, "new.nupkg");
    await zipDir(newDir, newPackage);

    await t.step("an old package's link to a server file is not read", async () => {
      const oldDir = join(work, "old");
      await Deno.mkdir(join(oldDir, "lib", "app"), { recursive: true });
      await Deno.symlink(secret, join(oldDir, "lib", "app", "secret.txt"));
      const oldPackage = join(work, "old.nupkg");
      await zipDir(oldDir, oldPackage, ["-y"]);
      await assert.rejects(build(oldPackage, newPackage, "w1"), /symbolic link/);
    });

    await t.step("an entry named with .. is refused before unpacking", async () => {
      const slip = join(work, "slip.nupkg");
      await Deno.writeFile(slip, oneEntryZip("../evil.txt", await deflatedZeros(10), 10));
      await assert.rejects(build(slip, newPackage, "w2"), /leaves the package/);
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("a deleted release takes the deltas and patches to it and from it along", async () => {
  await using app = await createTestApp();
  const project = await seedProject(app, { slug: "desk" });
  const [a, b, c] = [
    await seedRelease(app, project.id, "1.0.0", new Uint8Array([1])),
    await seedRelease(app, project.id, "1.1.0", new Uint8Array([2])),
    await seedRelease(app, project.id, "1.2.0", new Uint8Array([3])),
  ];
  const record = { storage_key: "k", checksum_sha256: "0".repeat(64), size_bytes: 1, build_ms: 1 };
  for (const [to, from] of [[b, a], [c, b], [c, a]]) {
    await putVelopackDelta(app.store, {
      ...record,
      release_id: to.id,
      from_release_id: from.id,
      from_version: from.version,
      sha1: "0".repeat(40),
    });
    await putArtifactPatch(app.store, {
      ...record,
      release_id: to.id,
      from_release_id: from.id,
      from_version: from.version,
      from_sha256: from.checksum_sha256,
    });
  }
  await deleteReleaseRecord(app.store, b.id);
  assert.deepEqual(await listVelopackDeltas(app.store, b.id), []);
  assert.deepEqual(await listArtifactPatches(app.store, b.id), []);
  assert.deepEqual((await listVelopackDeltas(app.store, c.id)).map((d) => d.from_release_id), [
    a.id,
  ]);
  assert.deepEqual((await listArtifactPatches(app.store, c.id)).map((p) => p.from_release_id), [
    a.id,
  ]);
});

Deno.test("what a crashed build left in the work directory is cleared, a running one's kept", async () => {
  const work = await Deno.makeTempDir({ prefix: "uds-delta-stale-" });
  try {
    await Deno.mkdir(join(work, "release-old", "delta-x"), { recursive: true });
    await Deno.writeTextFile(join(work, "release-old", "new.nupkg"), "x");
    await Deno.mkdir(join(work, "patch-new"));
    const old = new Date(Date.now() - 10 * 60_000);
    await Deno.utime(join(work, "release-old"), old, old);
    assert.equal(await clearStaleWork(work, 120_000), 1);
    assert.deepEqual((await Array.fromAsync(Deno.readDir(work))).map((e) => e.name), [
      "patch-new",
    ]);
    assert.equal(await clearStaleWork(join(work, "absent"), 120_000), 0);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
