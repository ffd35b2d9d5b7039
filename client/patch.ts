/**
 * The reference client's server-made patch (docs/client-api.md "Server-made
 * patches"): the service's zstd patch from the installed release's file to
 * the new one (`/feeds/patches/{releaseId}/{installedVersion}`), its own
 * SHA-256 (`X-Patch-SHA256`) checked before use and the installed file's
 * against `X-Patch-Base-SHA256`, applied with zstd (`zstd -d --patch-from`,
 * on PATH), and the result's size and SHA-256 checked against the release.
 * Both headers are read from the service's own answer: the patch itself, or
 * the redirect to the artifact store (`APP_DOWNLOAD_MODE=redirect`), which is
 * then followed without the key.
 * Any failure throws; client/differential.ts then takes the block map, then
 * the whole file.
 */
import { createHash } from "node:crypto";
import { type DownloadOptions, hashFile, writeAll } from "./download.ts";
import { asClientError, send, USER_AGENT } from "./http.ts";

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

/** Most redirects followed to the patch's bytes. */
const MAX_REDIRECTS = 5;

/** `res`, or where its redirects lead (fetched without the key); a 2xx answer or an error. */
async function followRedirect(options: PatchOptions, res: Response): Promise<Response> {
  const doFetch = options.fetch ?? fetch;
  for (let hops = 0; res.status >= 300 && res.status < 400; hops++) {
    await res.body?.cancel();
    const location = res.headers.get("location");
    if (location === null || hops >= MAX_REDIRECTS) {
      throw new Error(`the patch's redirect (${res.status}) leads nowhere`);
    }
    const url = new URL(location, res.url || options.baseUrl);
    try {
      res = await doFetch(url, {
        headers: { "user-agent": USER_AGENT },
        redirect: "manual",
        signal: AbortSignal.timeout(options.idleTimeoutMs ?? 30_000),
      });
    } catch (error) {
      throw asClientError(error, url);
    }
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`the patch's file answered ${res.status}`);
  }
  return res;
}

/** Makes `target` from the installed file and the service's patch; the patch's bytes received. */
export async function applyServerPatch(options: PatchOptions): Promise<number> {
  const { release, target } = options;
  const path = `/feeds/patches/${release.id}/${encodeURIComponent(options.installedVersion)}`;
  const patchPath = `${target}.patch`, outPath = `${target}.patched`;
  try {
    const answer = await send(options, path, { redirect: "manual" });
    const announced = {
      patch: answer.headers.get("x-patch-sha256")?.toLowerCase(),
      base: answer.headers.get("x-patch-base-sha256")?.toLowerCase(),
    };
    const res = await followRedirect(options, answer);
    const hash = createHash("sha256");
    let received = 0;
    {
      using file = await Deno.open(patchPath, { write: true, create: true, truncate: true });
      for await (const chunk of res.body ?? []) {
        received += chunk.byteLength;
        if (received >= release.size_bytes) throw new Error("the patch is larger than the file");
        hash.update(chunk);
        await writeAll(file, chunk, patchPath);
      }
    }
    if (hash.digest("hex") !== announced.patch) {
      throw new Error("the patch's SHA-256 is not the one announced");
    }
    const baseHash = createHash("sha256");
    const installedSize = await hashFile(options.installedFile, baseHash);
    if (announced.base !== baseHash.digest("hex")) {
      throw new Error("the installed file is not the one the patch applies to");
    }
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
    const outHash = createHash("sha256");
    const size = await hashFile(outPath, outHash);
    if (size !== release.size_bytes || outHash.digest("hex") !== release.checksum_sha256) {
      throw new Error("SHA-256 mismatch after applying the patch");
    }
    await Deno.rename(outPath, target);
    return received;
  } finally {
    await Deno.remove(patchPath).catch(() => {});
    await Deno.remove(outPath).catch(() => {});
  }
}
