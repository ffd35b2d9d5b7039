/** Reading many keys at once. */

/** Keys per `kv.getMany` call: Deno KV refuses more than 10. */
const GET_MANY_LIMIT = 10;

/** The entries of any number of `keys`, in their order (getMany in chunks of 10, read together). */
export async function getManyEntries<T>(
  kv: Deno.Kv,
  keys: readonly Deno.KvKey[],
): Promise<Deno.KvEntryMaybe<T>[]> {
  const chunks: Promise<Deno.KvEntryMaybe<T>[]>[] = [];
  for (let i = 0; i < keys.length; i += GET_MANY_LIMIT) {
    chunks.push(kv.getMany<T[]>(keys.slice(i, i + GET_MANY_LIMIT)));
  }
  return (await Promise.all(chunks)).flat();
}
