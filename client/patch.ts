/**
 * The reference client's server-made patch (docs/client-api.md "Server-made
 * patches"): the service's zstd patch from the installed release's file to
 * the new one (`/feeds/patches/{releaseId}/{installedVersion}`), its own
 * SHA-256 (`X-Patch-SHA256`) checked before use and the installed file's
 * against `X-Patch-Base-SHA256`, applied with zstd (`zstd -d --patch-from`,
 * on PATH), and the result's size and SHA-256 checked against the release.
 * Any failure throws; client/differential.ts then takes the block map, then
 * the whole file.
 */
import { createHash } from "node:crypto";
import type { DownloadOptions } from "./download.ts";
import { send } from "./http.ts";

export interface PatchOptions extends DownloadOptions {
  installedFile: string;
  installedVersion: string;
}

/** The number of bits of `n`'s highest set bit (the window zstd needs to cover `n` bytes). */
function highBit(n: number): number {
  let count = 0;
  while (n > 1) {
    n = Math.floor(n / 2);
    count++;
  }
  return count;
}

async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(path, { read: true });
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex");
}

/** Makes `target` from the installed file and the service's patch; the patch's bytes received. */
export async function applyServerPatch(options: PatchOptions): Promise<number> {
  const { release, target } = options;
  const path = `/feeds/patches/${release.id}/${encodeURIComponent(options.installedVersion)}`;
  const patchPath = `${target}.patch`, outPath = `${target}.patched`;
  try {
    const res = await send(options, path);
    const hash = createHash("sha256");
    let received = 0;
    {
      using file = await Deno.open(patchPath, { write: true, create: true, truncate: true });
      for await (const chunk of res.body ?? []) {
        received += chunk.byteLength;
        if (received >= release.size_bytes) throw new Error("the patch is larger than the file");
        hash.update(chunk);
        for (let written = 0; written < chunk.byteLength;) {
          written += await file.write(chunk.subarray(written));
        }
      }
    }
    if (hash.digest("hex") !== res.headers.get("x-patch-sha256")?.toLowerCase()) {
      throw new Error("the patch's SHA-256 is not the one announced");
    }
    const base = res.headers.get("x-patch-base-sha256")?.toLowerCase();
    if (base !== await sha256OfFile(options.installedFile)) {
      throw new Error("the installed file is not the one the patch applies to");
    }
    const installedSize = (await Deno.stat(options.installedFile)).size;
    const windowLog = highBit(Math.max(installedSize, release.size_bytes)) + 1;
    const args = ["-d", "-q", "-f", `--patch-from=${options.installedFile}`, "-o", outPath];
    if (windowLog >= 27) args.push(`--long=${windowLog}`);
    const out = await new Deno.Command("zstd", {
      args: [...args, patchPath],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`zstd: ${new TextDecoder().decode(out.stderr).trim().slice(0, 200)}`);
    }
    const { size } = await Deno.stat(outPath);
    if (size !== release.size_bytes || await sha256OfFile(outPath) !== release.checksum_sha256) {
      throw new Error("SHA-256 mismatch after applying the patch");
    }
    await Deno.rename(outPath, target);
    return received;
  } finally {
    await Deno.remove(patchPath).catch(() => {});
    await Deno.remove(outPath).catch(() => {});
  }
}
