/**
 * The HyperLogLog sketches kept in KV, one per UTC day and what it counts
 * (adoption_batch.ts, reports.ts): clients past an address's new-id cap, reports not counted.
 */
import { createSketch, mergeSketch } from "../lib/hyperloglog.ts";
import { DAY_MS } from "./adoption.ts";
import { commitWithRetry, NOTHING_TO_WRITE } from "../kv/atomic.ts";
import type { Store } from "../kv/store.ts";

/**
 * The name of the sketch part counting what `fields` name: each field's name
 * and value, by name (the same fields in any order name one part).
 */
export function sketchPartName(fields: Record<string, string | number>): string {
  return JSON.stringify(Object.keys(fields).sort().map((name) => [name, fields[name]]));
}

/** The part of `parts` that counts what `fields` name: a sketch, made when missing. */
export function sketchPart<P extends { sketch: Uint8Array }>(
  parts: Map<string, P>,
  fields: Omit<P, "sketch">,
): P {
  const name = sketchPartName(fields as Record<string, string | number>);
  let part = parts.get(name);
  if (part === undefined) {
    part = { ...fields, sketch: createSketch() } as P;
    parts.set(name, part);
  }
  return part;
}

/**
 * Takes each of `parts` into its stored sketch, at `keyOf(part)` (one
 * checked commit each, none when nothing changes). A stored sketch lives as
 * long as a marker of its UTC day would: until `keptDays` after that day,
 * and a day at least.
 */
export async function mergeStoredSketches<P extends { sketch: Uint8Array; day: number }>(
  store: Store,
  parts: Iterable<P>,
  { keyOf, keptDays }: { keyOf: (part: P) => Deno.KvKey; keptDays: number },
): Promise<void> {
  for (const part of parts) {
    const key = keyOf(part);
    const expireIn = Math.max(DAY_MS, (part.day + keptDays) * DAY_MS - Date.now());
    await commitWithRetry(async () => {
      const entry = await store.kv.get<Uint8Array>(key);
      const stored = entry.value ?? createSketch();
      if (!mergeSketch(stored, part.sketch)) {
        return { commit: NOTHING_TO_WRITE, value: 0 };
      }
      return {
        commit: await store.kv.atomic().check(entry).set(key, stored, { expireIn }).commit(),
        value: 0,
      };
    });
  }
}
