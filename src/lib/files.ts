/** Small file-system questions shared by the storage, backup, signing and delta-build code. */

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

/** The entries of directory `dir`; none when there is no such directory (other errors are thrown). */
export async function readDirEntries(dir: string): Promise<Deno.DirEntry[]> {
  try {
    return await Array.fromAsync(Deno.readDir(dir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}
