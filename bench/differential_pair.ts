/**
 * The realistic pair of artifacts (versions N and N+1) the differential
 * download is measured on (tests/electron_differential_test.ts, bench
 * scenario "differential"): an uncompressed tar of a changed part (two
 * consecutive versions of npm `yaml`'s JavaScript) before a large unchanged
 * part (npm app-builder-bin's Linux binary), which the changed part's new
 * size moves. npm caches the packages; app-builder-bin is installed once per
 * machine.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { npmInstallOnce } from "./process.ts";

/** The changed part: two consecutive versions of one package's JavaScript. */
export const CHANGED = ["yaml@2.8.0", "yaml@2.8.1"];

export async function runChecked(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

/** The two artifacts (N, N+1): tar of `package/` (the JS of one version) then `resources.bin`. */
export async function buildArtifacts(
  root: string,
  binary: string,
): Promise<[Uint8Array, Uint8Array]> {
  const packs = join(root, "packs");
  await Deno.mkdir(packs, { recursive: true });
  await runChecked("npm", ["pack", "--silent", "--pack-destination", packs, ...CHANGED]);
  const artifacts: Uint8Array[] = [];
  for (const [i, spec] of CHANGED.entries()) {
    const dir = join(root, `build-${i}`);
    await Deno.mkdir(dir, { recursive: true });
    const [name, version] = spec.split("@");
    await runChecked("tar", ["-xzf", join(packs, `${name}-${version}.tgz`), "-C", dir]);
    await Deno.copyFile(binary, join(dir, "resources.bin"));
    const out = join(root, `artifact-${i}.tar`);
    await runChecked("tar", [
      "-cf",
      out,
      "--sort=name",
      "--mtime=@0",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "-C",
      dir,
      "package",
      "resources.bin",
    ]);
    artifacts.push(await Deno.readFile(out));
  }
  return [artifacts[0], artifacts[1]];
}

/** The version of electron-builder's block map tool the test compares with. */
const APP_BUILDER_BIN = "app-builder-bin@4.2.0";

/** The path of app-builder-bin's Linux x64 binary, installed once per machine (`npmInstallOnce`). */
export async function installAppBuilder(): Promise<string> {
  const binary = (dir: string) =>
    join(dir, "node_modules", "app-builder-bin", "linux", "x64", "app-builder");
  const dir = await npmInstallOnce(APP_BUILDER_BIN, {
    prepare: { version: "1", run: (fresh) => Deno.chmod(binary(fresh), 0o755) },
  });
  return binary(dir);
}
