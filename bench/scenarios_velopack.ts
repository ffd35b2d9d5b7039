/**
 * Server-made Velopack deltas (docs/feeds.md "Server-made deltas"): two full
 * packages of about 150 MB (zipped; by default 300 MiB unpacked: a binary of
 * two thirds with a few changed places and 50 JavaScript files with one
 * changed), the delta
 * built between them with the service's limits (src/deltas/tools.ts): its
 * size, the build's time and peak memory (the largest of the build's
 * processes, zstd included, as GNU time reports it), and both per GB of
 * package.
 */
import { join } from "node:path";
import { MB, type Scenario, scratch } from "./context.ts";
import { PROJECT_ROOT, timedPeak } from "./process.ts";
import { makeRow } from "./table.ts";

const SCENARIO = "velopack server-made delta";

/** Bytes that compress about as well as a program: random runs among repeated text. */
function programLike(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  const text = new TextEncoder().encode("function update(state) { return state.next; }\n");
  for (let at = 0; at < length;) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const run = 64 + ((x >>> 8) & 1023);
    if (x & 1) {
      for (let i = 0; i < run && at < length; i++, at++) bytes[at] = text[(at + i) % text.length];
    } else {
      for (let i = 0; i < run && at < length; i++, at++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        bytes[at] = x & 0xff;
      }
    }
  }
  return bytes;
}

/** Packs version `version` of `unpackedBytes` (two thirds binary, a third JavaScript) as `out`. */
async function pack({ dir, version, out, unpackedBytes }: {
  dir: string;
  version: string;
  out: string;
  unpackedBytes: number;
}) {
  const binary = programLike(Math.round(unpackedBytes * 2 / 3), 11);
  // A new build: a few places of the binary differ.
  if (version !== "1.0.0") {
    for (let i = 1; i <= 8; i++) {
      binary.set(programLike(16_384, 50 + i), Math.floor(i * (binary.byteLength - 16_384) / 9));
    }
  }
  await Deno.mkdir(join(dir, "lib", "app", "node_modules"), { recursive: true });
  await Deno.writeFile(join(dir, "lib", "app", "DeskApp"), binary);
  const script = Math.round(unpackedBytes / 3 / 50);
  for (let i = 0; i < 50; i++) {
    const changed = version !== "1.0.0" && i === 7;
    await Deno.writeFile(
      join(dir, "lib", "app", "node_modules", `package-${i}.js`),
      programLike(script, changed ? 900 : 100 + i),
    );
  }
  await Deno.writeTextFile(
    join(dir, "DeskApp.nuspec"),
    `<package><metadata><id>DeskApp</id><version>${version}</version></metadata></package>`,
  );
  const zipped = await new Deno.Command("zip", { args: ["-q", "-r", "-X", out, "."], cwd: dir })
    .output();
  if (!zipped.success) throw new Error("zip failed");
}

export const velopackDeltas: Scenario = {
  name: "velopack",
  needs: [],
  template: () => [
    { scenario: SCENARIO, metric: "full package", unit: "B", service: null },
    { scenario: SCENARIO, metric: "delta package", unit: "B", service: null },
    { scenario: SCENARIO, metric: "delta / full", unit: "%", service: null },
    {
      scenario: SCENARIO,
      metric: "build time",
      unit: "s",
      service: null,
      target: { of: "service", op: "<=", value: 60 },
    },
    { scenario: SCENARIO, metric: "build time per GB of package", unit: "s/GB", service: null },
    {
      scenario: SCENARIO,
      metric: "peak memory",
      unit: "MB",
      service: null,
      target: { of: "service", op: "<=", value: 1024 },
    },
    { scenario: SCENARIO, metric: "peak memory per GB of package", unit: "MB/GB", service: null },
  ],
  async run(ctx) {
    const dir = scratch(ctx, "velopack");
    await Deno.mkdir(dir, { recursive: true });
    ctx.log(`velopack: packing two packages of ${ctx.params.velopackMiB} MiB unpacked`);
    const oldPackage = join(dir, "DeskApp-1.0.0-full.nupkg");
    const newPackage = join(dir, "DeskApp-1.0.1-full.nupkg");
    const unpackedBytes = ctx.params.velopackMiB * 1024 * 1024;
    await pack({ dir: join(dir, "old"), version: "1.0.0", out: oldPackage, unpackedBytes });
    await pack({ dir: join(dir, "new"), version: "1.0.1", out: newPackage, unpackedBytes });
    const work = join(dir, "work");
    await Deno.mkdir(work, { recursive: true });
    const out = await timedPeak(Deno.execPath(), [
      "run",
      "-A",
      join(PROJECT_ROOT, "bench", "velopack_delta_build.ts"),
      oldPackage,
      newPackage,
      work,
    ]);
    if (out.code !== 0) throw new Error(`delta build failed: ${out.stderr}`);
    const result = JSON.parse(out.stdout.trim().split("\n").at(-1)!);
    const peakMb = out.peakKiB * 1024 / MB;
    const full = (await Deno.stat(newPackage)).size;
    const gb = full / 1e9;
    const [fullRow, deltaRow, ratio, time, timePerGb, memory, memoryPerGb] = this.template(
      ctx.params,
    );
    await Deno.remove(dir, { recursive: true });
    return [
      makeRow({ ...fullRow, service: full }),
      makeRow({ ...deltaRow, service: result.bytes }),
      makeRow({ ...ratio, service: 100 * result.bytes / full }),
      makeRow({ ...time, service: result.ms / 1000 }),
      makeRow({ ...timePerGb, service: result.ms / 1000 / gb }),
      makeRow({ ...memory, service: peakMb }),
      makeRow({ ...memoryPerGb, service: peakMb / gb }),
    ];
  },
};
