/**
 * The programs a delta build runs (Debian's `zstd`, `zip`, `unzip` and
 * util-linux's `prlimit`), each with a deadline and, for zstd, a cap on its
 * address space: a build never runs longer or grows larger than its limits.
 */

/** What bounds one delta build (docs/feeds.md "Server-made deltas"). */
export interface DeltaLimits {
  /** The whole build's deadline, in milliseconds. */
  timeoutMs: number;
  /** The address space each zstd process may take, in bytes. */
  memoryBytes: number;
  /** The most a package may unpack to (each of the two), in bytes. */
  maxUnpackedBytes: number;
}

export const DEFAULT_DELTA_LIMITS: DeltaLimits = {
  timeoutMs: 120_000,
  memoryBytes: 1024 * 1024 * 1024,
  maxUnpackedBytes: 4 * 1024 * 1024 * 1024,
};

/** A program that failed or timed out. */
export class DeltaToolError extends Error {}

/** A program that could not be started (not installed, or not allowed to run). */
export class DeltaToolMissingError extends Error {}

/** Runs `program` with `args`, killed at `deadline` (a `Date.now()` value); its stdout. */
export async function runTool(
  program: string,
  args: string[],
  { deadline, cwd }: { deadline: number; cwd?: string },
): Promise<Uint8Array> {
  const left = deadline - Date.now();
  if (left <= 0) throw new DeltaToolError(`${program}: out of time`);
  let output;
  try {
    output = await new Deno.Command(program, {
      args,
      cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(left),
    }).output();
  } catch (error) {
    const message = `${program}: ${error instanceof Error ? error.message : error}`;
    if (
      error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotCapable ||
      error instanceof Deno.errors.PermissionDenied
    ) {
      throw new DeltaToolMissingError(message);
    }
    throw new DeltaToolError(message);
  }
  // 126 and 127: a program it runs (`prlimit`'s, say) could not be found or started.
  if (!output.success && !output.signal && (output.code === 126 || output.code === 127)) {
    const stderr = new TextDecoder().decode(output.stderr).trim().slice(0, 300);
    throw new DeltaToolMissingError(
      `${program}: exit ${output.code}${stderr ? `: ${stderr}` : ""}`,
    );
  }
  if (!output.success) {
    const reason = output.signal ? `killed (${output.signal})` : `exit ${output.code}`;
    const stderr = new TextDecoder().decode(output.stderr).trim().slice(0, 300);
    throw new DeltaToolError(`${program}: ${reason}${stderr ? `: ${stderr}` : ""}`);
  }
  return output.stdout;
}

/** The position of `n`'s highest set bit (0 for 1), as zstd's `FIO_highbit64` counts. */
function highBit(n: number): number {
  return Math.max(0, Math.floor(n).toString(2).length - 1);
}

/**
 * zstd's patch of `newPath` against `oldPath` as the dictionary (`--patch-from`), the way
 * Velopack's packager makes a `.zsdiff`: a long window when the files are large (the window
 * must cover the old file). Level 9 up to 64 MiB, 3 above (a 150 MB file in seconds).
 */
export async function zstdPatch(
  { oldPath, newPath, outPath, limits, deadline }: {
    oldPath: string;
    newPath: string;
    outPath: string;
    limits: DeltaLimits;
    deadline: number;
  },
): Promise<void> {
  const [oldSize, newSize] = await Promise.all([
    Deno.stat(oldPath).then((s) => s.size),
    Deno.stat(newPath).then((s) => s.size),
  ]);
  const args = [
    `--as=${limits.memoryBytes}`,
    "--",
    "zstd",
    ...zstdPatchArgs({ oldPath, newPath, outPath, largest: Math.max(oldSize, newSize) }),
  ];
  await runTool("prlimit", args, { deadline });
}

/** zstd's arguments for the patch of `newPath` against `oldPath`, the larger of them `largest` bytes. */
export function zstdPatchArgs(
  { oldPath, newPath, outPath, largest }: {
    oldPath: string;
    newPath: string;
    outPath: string;
    largest: number;
  },
): string[] {
  const windowLog = highBit(largest) + 1;
  const args = [
    "-q",
    "-f",
    "--single-thread",
    largest <= 64 * 1024 * 1024 ? "-9" : "-3",
    `--patch-from=${oldPath}`,
    "-o",
    outPath,
  ];
  if (windowLog >= 27) args.push(`--long=${windowLog}`);
  args.push(newPath);
  return args;
}

/** The total unpacked size of the zip at `path`, from its central directory (`unzip -Zt`). */
export async function unpackedSize(path: string, deadline: number): Promise<number> {
  const text = new TextDecoder().decode(await runTool("unzip", ["-Zt", path], { deadline }));
  const match = /(\d+) bytes uncompressed/.exec(text);
  if (match === null) throw new DeltaToolError(`unzip: cannot read the size of ${path}`);
  return Number(match[1]);
}
