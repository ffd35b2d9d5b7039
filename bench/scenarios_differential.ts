/**
 * Differential downloads on the realistic pair (bench/differential_pair.ts):
 * the whole file's bytes, the bytes electron-updater's plan asks for (the new
 * release's blocks the installed one lacks, plus both block maps: what a
 * client downloads), their ratio, the time to build a block map per GB, and
 * the upload pass's throughput (SHA-256 and SHA-512) with a block map built
 * in the same pass against without (why the service builds it right after
 * the upload instead, docs/feeds.md).
 */
import { createHash } from "node:crypto";
import { MB, type Scenario, scratch } from "./context.ts";
import { buildArtifacts, installAppBuilder } from "./differential_pair.ts";
import { type BlockMap, createBlockMapBuilder, encodeBlockMap } from "../src/blockmap/build.ts";
import { zstdPatchArgs } from "../src/deltas/tools.ts";
import { timedPeak } from "./process.ts";
import { makeRow } from "./table.ts";

const SCENARIO = "differential download";
/** The upload pass is fed in pieces of this size, as the multipart reader hands them on. */
const PIECE = 256 * 1024;

/** The bytes of `next` whose blocks `installed` lacks (electron-updater copies the others). */
function changedBytes(installed: BlockMap, next: BlockMap): number {
  const have = new Set<string>();
  const [old] = installed.files;
  old.checksums.forEach((checksum, i) => have.add(`${checksum}:${old.sizes[i]}`));
  const [file] = next.files;
  return file.checksums.reduce(
    (sum, checksum, i) => have.has(`${checksum}:${file.sizes[i]}`) ? sum : sum + file.sizes[i],
    0,
  );
}

/** The server-made patch from `installed` to `next`: its size, build time and zstd's peak RSS. */
async function patchOf(
  dir: string,
  installed: Uint8Array,
  next: Uint8Array,
): Promise<{ bytes: number; ms: number; peakBytes: number }> {
  const [oldPath, newPath, outPath] = ["old", "new", "patch.zst"].map((n) => `${dir}/${n}`);
  await Deno.writeFile(oldPath, installed);
  await Deno.writeFile(newPath, next);
  const largest = Math.max(installed.byteLength, next.byteLength);
  const out = await timedPeak("zstd", zstdPatchArgs({ oldPath, newPath, outPath, largest }));
  if (out.code !== 0) throw new Error(`zstd --patch-from: ${out.stderr.trim()}`);
  return { bytes: (await Deno.stat(outPath)).size, ms: out.ms, peakBytes: out.peakKiB * 1024 };
}

/** MB/s of one pass over `bytes`: the upload's hashes, and the block map too when asked. */
async function passRate(bytes: Uint8Array, withBlockMap: boolean): Promise<number> {
  const started = performance.now();
  const sha256 = createHash("sha256");
  const sha512 = createHash("sha512");
  const builder = withBlockMap ? await createBlockMapBuilder() : null;
  for (let at = 0; at < bytes.byteLength; at += PIECE) {
    const piece = bytes.subarray(at, at + PIECE);
    sha256.update(piece);
    sha512.update(piece);
    builder?.update(piece);
  }
  sha256.digest();
  sha512.digest();
  builder?.finish();
  return bytes.byteLength / MB / ((performance.now() - started) / 1000);
}

async function blockMapOf(bytes: Uint8Array): Promise<{ map: BlockMap; ms: number }> {
  const started = performance.now();
  const builder = await createBlockMapBuilder();
  for (let at = 0; at < bytes.byteLength; at += PIECE) {
    builder.update(bytes.subarray(at, at + PIECE));
  }
  const map = builder.finish();
  return { map, ms: performance.now() - started };
}

export const differential: Scenario = {
  name: "differential",
  needs: [],
  template: () => [
    { scenario: SCENARIO, metric: "full download", unit: "B", service: null },
    {
      scenario: SCENARIO,
      metric: "differential download (changed blocks + both block maps)",
      unit: "B",
      service: null,
    },
    { scenario: SCENARIO, metric: "differential / full", unit: "%", service: null },
    { scenario: SCENARIO, metric: "block map build", unit: "s/GB", service: null },
    {
      scenario: SCENARIO,
      metric: "server-made patch (zstd --patch-from, the reference client)",
      unit: "B",
      service: null,
    },
    {
      scenario: SCENARIO,
      metric: "patch / differential download",
      unit: "%",
      service: null,
      target: { of: "service", op: "<=", value: 50 },
    },
    { scenario: SCENARIO, metric: "patch build", unit: "s/GB", service: null },
    {
      scenario: SCENARIO,
      metric: "patch build peak memory",
      unit: "MB/GB",
      service: null,
      note: "zstd's peak RSS over the new file's size: fixed costs weigh more on a small file",
    },
    {
      scenario: SCENARIO,
      metric: "upload pass with the block map in it",
      unit: "MB/s",
      service: null,
      baselineName: "SHA-256 + SHA-512 only",
      ratioOf: "service/baseline",
      target: { of: "ratio", op: ">=", value: 0.9 },
      note: "below 0.9: block maps are built right after the upload, not in its pass",
    },
  ],
  async run(ctx) {
    const dir = scratch(ctx, "differential");
    await Deno.mkdir(dir, { recursive: true });
    ctx.log("differential: building the realistic pair (npm yaml, app-builder-bin)");
    const [installed, next] = await buildArtifacts(dir, await installAppBuilder());
    const before = await blockMapOf(installed);
    const after = await blockMapOf(next);
    const maps = encodeBlockMap(before.map).byteLength + encodeBlockMap(after.map).byteLength;
    const differentialBytes = changedBytes(before.map, after.map) + maps;
    const patch = await patchOf(dir, installed, next);
    const gb = next.byteLength / 1e9;
    const [full, diff, ratio, build, patchSize, patchRatio, patchBuild, patchMemory, pass] = this
      .template(ctx.params);
    const rates = { with: [] as number[], without: [] as number[] };
    for (let round = 0; round < 3; round++) {
      rates.without.push(await passRate(next, false));
      rates.with.push(await passRate(next, true));
    }
    return [
      makeRow({ ...full, service: next.byteLength }),
      makeRow({ ...diff, service: differentialBytes }),
      makeRow({ ...ratio, service: 100 * differentialBytes / next.byteLength }),
      makeRow({ ...build, service: after.ms / 1000 / gb }),
      makeRow({ ...patchSize, service: patch.bytes }),
      makeRow({ ...patchRatio, service: 100 * patch.bytes / differentialBytes }),
      makeRow({ ...patchBuild, service: patch.ms / 1000 / gb }),
      makeRow({ ...patchMemory, service: patch.peakBytes / MB / gb }),
      makeRow({ ...pass, service: Math.max(...rates.with), baseline: Math.max(...rates.without) }),
    ];
  },
};
