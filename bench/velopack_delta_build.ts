/**
 * One server-made Velopack delta build (src/deltas/velopack_delta.ts) with
 * the service's limits, as its own process so that its peak memory (and its
 * zstd children's) can be measured: `deno run -A bench/velopack_delta_build.ts
 * <old.nupkg> <new.nupkg> <work dir>` prints `{ ms, bytes, changed, same, added }`.
 */
import { DEFAULT_DELTA_LIMITS } from "../src/deltas/tools.ts";
import { buildVelopackDelta } from "../src/deltas/velopack_delta.ts";

const [oldPackage, newPackage, workDir] = Deno.args;
const started = performance.now();
const built = await buildVelopackDelta({
  oldPackage,
  newPackage,
  workDir,
  limits: DEFAULT_DELTA_LIMITS,
});
const ms = performance.now() - started;
const bytes = (await Deno.stat(built.path)).size;
console.log(JSON.stringify({ ms, bytes, ...built, path: undefined }));
