/** The project's own TypeScript files, for the tests that check rules over all of them. */
import { join } from "node:path";
import { PROJECT_ROOT } from "./server_process.ts";

/** Every .ts and .tsx file below `dir` (relative to the project root), as a path relative to it. */
export async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(join(PROJECT_ROOT, dir))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await sourceFiles(path));
    else if (/\.tsx?$/.test(entry.name)) files.push(path);
  }
  return files;
}
