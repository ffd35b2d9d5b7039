/**
 * The exact cap with a sketch beyond, as adoption (adoption_batch.ts) and
 * install reports (reports.ts) write it: new items get markers while their
 * client address has made fewer than the cap that UTC day (one checked
 * commit per 40, src/kv/capped_markers.ts); the others go into the
 * HyperLogLog sketch of what they count, with the batch's `overflow`, and
 * the sketches are merged into the stored ones (stored_sketch.ts).
 */
import { type CappedMarker, makeCappedMarkers } from "../kv/capped_markers.ts";
import { addToSketch } from "../lib/hyperloglog.ts";
import { mergeStoredSketches, sketchPart } from "./stored_sketch.ts";
import type { Store } from "../kv/store.ts";

/** What the capped write needs of an item: its hashed client. */
interface CappedItem {
  client: string;
}

/**
 * Writes the new items of `groups` (each of one address and day) under
 * `cap`, the rest into sketches; returns the items marked now and those
 * found with a marker already.
 */
export async function writeCapped<
  T extends CappedItem,
  P extends { sketch: Uint8Array; day: number },
>(
  store: Store,
  options: {
    groups: Iterable<T[]>;
    cap: number;
    /** The counter of new markers of a group's address and day. */
    countKey: (first: T) => Deno.KvKey;
    markerKey: (item: T) => Deno.KvKey;
    marker: (item: T) => CappedMarker;
    /** Once a commit finds the cap reached, the group's items after it go to the sketch unread. */
    unreadPastCap?: boolean;
    /** The batch's sketches so far; the items past the cap are added. */
    overflow: Map<string, P>;
    /** What an item's sketch counts (its part of `overflow`). */
    sketchOf: (item: T) => Omit<P, "sketch">;
    sketchKey: (part: P) => Deno.KvKey;
    /** How long a stored sketch is kept after its day. */
    keptDays: number;
  },
): Promise<{ admitted: T[]; existing: T[] }> {
  const { overflow, sketchOf } = options;
  const admitted: T[] = [];
  const existing: T[] = [];
  for (const group of options.groups) {
    if (group.length === 0) continue;
    const marked = await makeCappedMarkers(store.kv, {
      ...options,
      countKey: options.countKey(group[0]),
      items: group,
    });
    admitted.push(...marked.admitted);
    existing.push(...marked.existing);
    for (const item of marked.past) {
      addToSketch(sketchPart(overflow, sketchOf(item)).sketch, item.client);
    }
  }
  await mergeStoredSketches(store, overflow.values(), {
    keyOf: options.sketchKey,
    keptDays: options.keptDays,
  });
  return { admitted, existing };
}
