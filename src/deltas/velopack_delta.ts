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

/** Every file under `dir`, as paths relative to it with `/` separators. */
async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const relative = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory) files.push(...await listFiles(dir, relative));
    else if (entry.isFile) files.push(relative);
  }
  return files;
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

/** Unpacks the zip at `path` into `dir`, refusing one that unpacks larger than the limit. */
async function unpack(
  { path, dir, limits, deadline }: {
    path: string;
    dir: string;
    limits: DeltaLimits;
    deadline: number;
  },
) {
  const size = await unpackedSize(path, deadline);
  if (size > limits.maxUnpackedBytes) {
    throw new DeltaToolError(`${path} unpacks to ${size} bytes, over the limit`);
  }
  await Deno.mkdir(dir, { recursive: true });
  await runTool("unzip", ["-q", "-o", path, "-d", dir], { deadline });
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
  await unpack({ path: oldPackage, dir: oldDir, limits, deadline });
  await unpack({ path: newPackage, dir: newDir, limits, deadline });
  await Deno.mkdir(outDir, { recursive: true });
  const build: DeltaBuild = { path: `${workDir}/delta.nupkg`, changed: 0, same: 0, added: 0 };
  for (const relative of await listFiles(newDir)) {
    const source = `${newDir}/${relative}`;
    const target = `${outDir}/${relative}`;
    const old = `${oldDir}/${relative}`;
    const oldExists = relative.startsWith("lib/") &&
      await Deno.stat(old).then((s) => s.isFile, () => false);
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
