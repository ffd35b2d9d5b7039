/** Whether the artifact storage answers, for /healthz. */
import type { ArtifactStore } from "./types.ts";

/**
 * `ok` when the storage answers: for s3 what the last call showed, or a quick
 * probe (`checkHealth`); for fs the artifacts dir can be looked at (a dir
 * not made yet is fine: the next upload makes it). Never throws.
 */
export async function storageHealth(store: ArtifactStore): Promise<"ok" | "unavailable"> {
  try {
    if (store.checkHealth !== undefined) return await store.checkHealth() ? "ok" : "unavailable";
    const dir = (store as { dir?: string }).dir;
    if (dir === undefined) return "ok";
    return (await Deno.stat(dir)).isDirectory ? "ok" : "unavailable";
  } catch (error) {
    return error instanceof Deno.errors.NotFound ? "ok" : "unavailable";
  }
}
