/**
 * electron-builder's own block map tool for the tests: `app-builder` from
 * npm app-builder-bin (pinned in bench/differential_pair.ts).
 */
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";

export { installAppBuilder } from "../bench/differential_pair.ts";

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
