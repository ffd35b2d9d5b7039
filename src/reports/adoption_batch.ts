/**
 * A batch of sightings written at once (docs/rollouts.md "Adoption"), with
 * the new-id cap: the markers of the batch are read together, a client
 * whose marker a sighting changes is moved (recordSighting), and a client
 * without a marker is new. A new client by its key alone is always
 * counted; a new install id is counted exactly while the client address it
 * came from (an IPv6 one as its /64) has brought in fewer than
 * the cap of new install ids that UTC day (counter
 * `["adoption_new_ids", address, day]`, checked in the commit that creates
 * the markers), and past the cap it goes into the sketch of its (release,
 * day) instead: a fixed 4 KiB, however many ids an address invents. A
 * fleet on one key from many addresses is counted exactly however large.
 */
import { addToSketch } from "../lib/hyperloglog.ts";
import {
  ADOPTION_MARKER_DAYS,
  type AdoptionMarker,
  changesMarker,
  DAY_MS,
  newMarker,
  recordSighting,
  type Sighting,
} from "./adoption.ts";
import { makeCappedMarkers } from "../kv/capped_markers.ts";
import { getManyEntries } from "../kv/get_many.ts";
import {
  adoptionClientKey,
  adoptionCountKey,
  adoptionNewIdsKey,
  adoptionSketchKey,
} from "../kv/keys.ts";
import { mergeStoredSketches, sketchPart } from "./stored_sketch.ts";
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

/** New clients created per commit (a check and two mutations each, within KV's limits). */
const NEW_CLIENTS_PER_COMMIT = 40;

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
  const newIds = new Map<string, KeyedSighting[]>();
  for (const [i, sighting] of sightings.entries()) {
    const marker = markers[i].value;
    if (marker === null && sighting.install) {
      const group = `${sighting.address} ${sighting.day}`;
      const members = newIds.get(group);
      if (members === undefined) newIds.set(group, [sighting]);
      else members.push(sighting);
    } else if (changesMarker(marker, sighting)) {
      await recordSighting(store, sighting, markers[i]);
    }
  }
  for (const group of newIds.values()) {
    for (let i = 0; i < group.length; i += NEW_CLIENTS_PER_COMMIT) {
      const past = await admitNewIds(
        store,
        group.slice(i, i + NEW_CLIENTS_PER_COMMIT),
        newIdsPerDay,
      );
      for (const sighting of past) {
        const { projectId, releaseId, day } = sighting;
        addToSketch(sketchPart(overflow, { projectId, releaseId, day }).sketch, sighting.client);
      }
    }
  }
  await mergeStoredSketches(store, overflow.values(), {
    keyOf: (part) => adoptionSketchKey(part.projectId, part.releaseId, part.day),
    keptDays: ADOPTION_MARKER_DAYS,
  });
}

/**
 * Creates markers for new install ids of one address and day while the
 * address's count of new ids that day stays within `cap`, in one commit
 * checked against the count and every marker (makeCappedMarkers); returns
 * the sightings past the cap. A client found with a marker meanwhile is moved as usual.
 */
async function admitNewIds(
  store: Store,
  sightings: KeyedSighting[],
  cap: number,
): Promise<KeyedSighting[]> {
  const { address, day } = sightings[0];
  const { past, existing } = await makeCappedMarkers(store.kv, {
    countKey: adoptionNewIdsKey(address, day),
    cap,
    items: sightings,
    markerKey: (sighting) => adoptionClientKey(sighting.projectId, sighting.client),
    marker: (sighting) => ({
      value: newMarker(sighting),
      expireIn: ADOPTION_MARKER_DAYS * DAY_MS,
      counters: [adoptionCountKey(sighting.projectId, sighting.releaseId, sighting.day)],
    }),
  });
  for (const sighting of existing) await recordSighting(store, sighting);
  return past;
}
