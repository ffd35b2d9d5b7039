/** Small file-system questions shared by the storage and backup code. */

/** Whether anything (file, directory, link) is at `path`; other errors are thrown. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
