/**
 * Reading a Velopack full package (`vpk pack`'s `.nupkg`, a zip): the `<id>`
 * and `<version>` of the `.nuspec` at its root.
 */
import { runTool } from "./tools.ts";

const ENTITIES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&apos;": "'",
};

function elementText(xml: string, name: string): string | null {
  const match = new RegExp(`<${name}(?:\\s[^>]*)?>([^<]*)</${name}>`).exec(xml);
  return match === null ? null : match[1].replace(/&[a-z]+;/g, (e) => ENTITIES[e] ?? e).trim();
}

/** The package's id and version, or why it is no Velopack package. */
export async function readNuspec(
  path: string,
  deadline: number,
): Promise<{ id: string; version: string } | { problem: string }> {
  let names;
  try {
    names = new TextDecoder().decode(await runTool("unzip", ["-Z1", path], { deadline }))
      .split("\n");
  } catch {
    return { problem: "not a zip archive" };
  }
  const nuspec = names.find((name) => name.endsWith(".nuspec") && !name.includes("/"));
  if (nuspec === undefined) return { problem: "no .nuspec at the package's root" };
  // unzip reads its name arguments as wildcards: `[` is escaped.
  const xml = new TextDecoder().decode(
    await runTool("unzip", ["-p", path, nuspec.replace(/\[/g, "[[]")], { deadline }),
  );
  const id = elementText(xml, "id");
  const version = elementText(xml, "version");
  if (!id || !version) return { problem: "the .nuspec names no id or version" };
  return { id, version };
}
