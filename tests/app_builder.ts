/**
 * electron-builder's own block map tool for the tests: `app-builder` from
 * npm app-builder-bin (pinned below), installed into a test's temporary dir
 * (npm caches it).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

/** The version of electron-builder's block map tool the test compares with (npm caches it). */
const APP_BUILDER_BIN = "app-builder-bin@4.2.0";

/** Installs app-builder-bin under `root`; the path of its Linux x64 binary. */
export async function installAppBuilder(root: string): Promise<string> {
  const dir = join(root, "app-builder");
  await Deno.mkdir(dir, { recursive: true });
  const out = await new Deno.Command("npm", {
    args: ["install", "--no-audit", "--no-fund", "--prefix", dir, APP_BUILDER_BIN],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const binary = join(dir, "node_modules", "app-builder-bin", "linux", "x64", "app-builder");
  await Deno.chmod(binary, 0o755);
  return binary;
}

/** `app-builder blockmap` of `path`, written beside it as `<path>.blockmap`; its JSON. */
export async function appBuilderBlockMap(binary: string, path: string): Promise<unknown> {
  const out = await new Deno.Command(binary, {
    args: ["blockmap", "--input", path, "--output", `${path}.blockmap`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(gunzipSync(await Deno.readFile(`${path}.blockmap`))));
}
