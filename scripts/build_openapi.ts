/**
 * Writes docs/openapi.json from docs/openapi.yaml (the hand-written source).
 * Run `deno task openapi` after editing the YAML; a test fails while the two differ.
 */
import { parse } from "yaml";

/** The YAML document as plain JSON data (anchors expanded). */
export function openApiFromYaml(yamlText: string): unknown {
  return parse(yamlText);
}

if (import.meta.main) {
  const dir = new URL("../docs/", import.meta.url);
  const document = openApiFromYaml(await Deno.readTextFile(new URL("openapi.yaml", dir)));
  await Deno.writeTextFile(new URL("openapi.json", dir), JSON.stringify(document, null, 2) + "\n");
  console.log("wrote docs/openapi.json");
}
