/**
 * A Velopack delta package from one full package to another, in the format
 * Velopack's `Update patch` command applies (the `patch` command of the bins
 * crate in velopack/velopack; its packager's DeltaPackageBuilder.cs):
 * a zip holding, under `lib/`, for each file of the new package that the old
 * one has, `{file}.zsdiff` (zstd with the old file as dictionary) and
 * `{file}.shasum` (`SHA1 name size`), or an empty `{file}.diff` and
 * `{file}.shasum` when it is unchanged; each file the old one lacks as it is;
 * and every file outside `lib/` (the `.nuspec` and the package's metadata)
 * as it is. A file of the old package the delta does not name is deleted.
 */
import { createHash } from "node:crypto";
import { type DeltaLimits, DeltaToolError, runTool, unpackedSize, zstdPatch } from "./tools.ts";

export interface DeltaBuild {
  /** The delta package written, in `workDir`. */
  path: string;
  /** Files patched, unchanged and new. */
  changed: number;
  same: number;
  added: number;
}

/**
 * Every file under `dir`, as paths relative to it with `/` separators, and their total size;
 * a symbolic link (which unzip restores) is refused: a build reads only the packages' own files.
 */
async function listFiles(
  dir: string,
  prefix = "",
): Promise<{ files: string[]; bytes: number }> {
  const found = { files: [] as string[], bytes: 0 };
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const relative = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isSymlink) throw new DeltaToolError(`the package holds a symbolic link: ${relative}`);
    if (entry.isDirectory) {
      const inner = await listFiles(dir, relative);
      found.files.push(...inner.files);
      found.bytes += inner.bytes;
    } else if (entry.isFile) {
      found.files.push(relative);
      found.bytes += (await Deno.lstat(`${dir}/${relative}`)).size;
    }
  }
  return found;
}

/** Whether a zip entry's name would be written outside the directory it is unpacked into. */
function leavesDirectory(name: string): boolean {
  return name.startsWith("/") || name.includes("\\") || /^[A-Za-z]:/.test(name) ||
    name.split("/").includes("..");
}

async function sha1Of(path: string): Promise<string> {
  const hash = createHash("sha1");
  using file = await Deno.open(path);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex").toUpperCase();
}

async function sameContent(a: string, b: string): Promise<boolean> {
  const [left, right] = await Promise.all([Deno.stat(a), Deno.stat(b)]);
  if (left.size !== right.size) return false;
  const [x, y] = await Promise.all([sha1Of(a), sha1Of(b)]);
  return x === y;
}

async function copyInto(from: string, to: string): Promise<void> {
  await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
  await Deno.copyFile(from, to);
}

/**
 * Unpacks the zip at `path` into `dir`, refusing one whose entries would land outside it, that
 * declares more than the limit, or that unpacks to more: unzip runs with a cap on the size of
 * each file it writes (`prlimit --fsize`), and the files written are counted after.
 */
async function unpack(
  { path, dir, limits, deadline }: {
    path: string;
    dir: string;
    limits: DeltaLimits;
    deadline: number;
  },
): Promise<string[]> {
  const names = new TextDecoder().decode(await runTool("unzip", ["-Z1", path], { deadline }));
  for (const name of names.split("\n")) {
    if (leavesDirectory(name)) {
      throw new DeltaToolError(`${path}: an entry leaves the package: ${name.slice(0, 100)}`);
    }
  }
  const size = await unpackedSize(path, deadline);
  if (size > limits.maxUnpackedBytes) {
    throw new DeltaToolError(`${path} unpacks to ${size} bytes, over the limit`);
  }
  await Deno.mkdir(dir, { recursive: true });
  await runTool(
    "prlimit",
    [`--fsize=${limits.maxUnpackedBytes}`, "--", "unzip", "-q", "-o", path, "-d", dir],
    { deadline },
  );
  const { files, bytes } = await listFiles(dir);
  if (bytes > limits.maxUnpackedBytes) {
    throw new DeltaToolError(`${path} unpacks to ${bytes} bytes, over the limit`);
  }
  return files;
}

/**
 * Builds the delta package from the full package at `oldPackage` to the one at
 * `newPackage`, in the empty directory `workDir`, within `limits`.
 */
export async function buildVelopackDelta(
  { oldPackage, newPackage, workDir, limits }: {
    oldPackage: string;
    newPackage: string;
    workDir: string;
    limits: DeltaLimits;
  },
): Promise<DeltaBuild> {
  const deadline = Date.now() + limits.timeoutMs;
  const oldDir = `${workDir}/old`;
  const newDir = `${workDir}/new`;
  const outDir = `${workDir}/delta`;
  const oldFiles = new Set(await unpack({ path: oldPackage, dir: oldDir, limits, deadline }));
  const newFiles = await unpack({ path: newPackage, dir: newDir, limits, deadline });
  await Deno.mkdir(outDir, { recursive: true });
  const build: DeltaBuild = { path: `${workDir}/delta.nupkg`, changed: 0, same: 0, added: 0 };
  for (const relative of newFiles) {
    const source = `${newDir}/${relative}`;
    const target = `${outDir}/${relative}`;
    const old = `${oldDir}/${relative}`;
    // Only the old package's own regular files (no path through a link) are read.
    const oldExists = relative.startsWith("lib/") && oldFiles.has(relative);
    if (!oldExists) {
      await copyInto(source, target);
      if (relative.startsWith("lib/")) build.added++;
      continue;
    }
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
    if (await sameContent(old, source)) {
      await Deno.writeFile(`${target}.diff`, new Uint8Array());
      await Deno.writeFile(`${target}.shasum`, new Uint8Array());
      build.same++;
      continue;
    }
    await zstdPatch({
      oldPath: old,
      newPath: source,
      outPath: `${target}.zsdiff`,
      limits,
      deadline,
    });
    const name = relative.slice(relative.lastIndexOf("/") + 1);
    const size = (await Deno.stat(source)).size;
    await Deno.writeTextFile(`${target}.shasum`, `${await sha1Of(source)} ${name} ${size}`);
    build.changed++;
  }
  // -D: no directory entries; -X: no extra attributes (the same bytes from the same files).
  await runTool("zip", ["-q", "-r", "-X", "-D", build.path, "."], { deadline, cwd: outDir });
  await Promise.all([oldDir, newDir, outDir].map((dir) => Deno.remove(dir, { recursive: true })));
  return build;
}
