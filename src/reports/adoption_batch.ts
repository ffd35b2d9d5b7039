/**
 * A batch of sightings written at once (docs/rollouts.md "Adoption"), with
 * the new-id cap: the markers of the batch are read together, a client
 * whose marker a sighting changes is moved (recordSighting), and a client
 * without a marker is new. A new client by its key alone is always
 * counted; a new install id is counted exactly while the client address it
 * came from (an IPv6 one as its /64) has brought in fewer than the cap of
 * new install ids that UTC day (counter `["adoption_new_ids", address,
 * day]`, checked in the commit that creates the markers; capped_write.ts),
 * and past the cap it goes into the sketch of its (release, day) instead:
 * a fixed 4 KiB, however many ids an address invents. A
 * fleet on one key from many addresses is counted exactly however large.
 */
import {
  ADOPTION_MARKER_DAYS,
  type AdoptionMarker,
  changesMarker,
  DAY_MS,
  newMarker,
  recordSighting,
  type Sighting,
} from "./adoption.ts";
import { getManyEntries } from "../kv/get_many.ts";
import {
  adoptionClientKey,
  adoptionCountKey,
  adoptionNewIdsKey,
  adoptionSketchKey,
} from "../kv/keys.ts";
import { writeCapped } from "./capped_write.ts";
import type { Store } from "../kv/store.ts";

/** A sighting with what the new-id cap needs: the client's address and whether an install id was sent. */
export interface KeyedSighting extends Sighting {
  /** The client address the request came from, as the rate limit counts it (an IPv6 one as its /64). */
  address: string;
  /** True when the client is an install id (`install:…`), false when it is the key. */
  install: boolean;
}

/** Clients of a (release, day) counted in a sketch rather than with markers. */
export interface SketchPart {
  projectId: number;
  releaseId: number;
  day: number;
  sketch: Uint8Array;
}

/**
 * Writes `sightings` (at most one per client) with at most `newIdsPerDay`
 * new install ids per client address and UTC day counted exactly; the
 * others, and `overflow`, go into the sketches.
 */
export async function recordSightings(
  store: Store,
  batch: { sightings: KeyedSighting[]; overflow: Map<string, SketchPart>; newIdsPerDay: number },
): Promise<void> {
  const { sightings, overflow, newIdsPerDay } = batch;
  const markers = await getManyEntries<AdoptionMarker>(
    store.kv,
    sightings.map((s) => adoptionClientKey(s.projectId, s.client)),
  );
  const fresh: KeyedSighting[] = [];
  for (const [i, sighting] of sightings.entries()) {
    const marker = markers[i].value;
    if (marker === null && sighting.install) fresh.push(sighting);
    else if (changesMarker(marker, sighting)) await recordSighting(store, sighting, markers[i]);
  }
  const { existing } = await writeCapped(store, {
    groups: Map.groupBy(fresh, (s) => `${s.address} ${s.day}`).values(),
    cap: newIdsPerDay,
    countKey: ({ address, day }) => adoptionNewIdsKey(address, day),
    markerKey: ({ projectId, client }) => adoptionClientKey(projectId, client),
    marker: (sighting) => ({
      value: newMarker(sighting),
      expireIn: ADOPTION_MARKER_DAYS * DAY_MS,
      counters: [adoptionCountKey(sighting.projectId, sighting.releaseId, sighting.day)],
    }),
    overflow,
    sketchOf: ({ projectId, releaseId, day }) => ({ projectId, releaseId, day }),
    sketchKey: (part) => adoptionSketchKey(part.projectId, part.releaseId, part.day),
    keptDays: ADOPTION_MARKER_DAYS,
  });
  // A client found with a marker meanwhile is moved as usual.
  for (const sighting of existing) await recordSighting(store, sighting);
}
