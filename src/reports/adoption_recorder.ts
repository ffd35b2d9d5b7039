/**
 * Records client sightings off the request path (docs/rollouts.md
 * "Adoption"): a request only puts its client's latest sighting into this
 * instance's pending map (no KV round trip, no hashing); in the background
 * the whole map is taken as one batch and written (adoption_batch.ts), at
 * most one batch a `batchMs`, and what arrives meanwhile waits for the next.
 * The batching writer (src/kv/batch_writer.ts) does the queueing and its
 * failure policy: a batch that could not be written is tried again a
 * `batchMs` later while its sightings are younger than a minute and there is
 * room; a client seen again meanwhile keeps one sighting, the two merged as
 * on `record`.
 * Nothing here decides that a sighting needs no write: the KV's marker
 * does, so instances never disagree about a client.
 */
import { createBatchWriter, type Queued } from "../kv/batch_writer.ts";
import { addToSketch } from "../lib/hyperloglog.ts";
import { adoptionClientHash, adoptionDay } from "./adoption.ts";
import { type KeyedSighting, recordSightings, type SketchPart } from "./adoption_batch.ts";
import { sketchPart } from "./stored_sketch.ts";
import type { Store } from "../kv/store.ts";

/** Records client sightings off the hot path (one per instance, made by the app). */
export interface AdoptionRecorder {
  /**
   * Notes that `identity`, asking from `address`, was answered `releaseId`
   * (`offered`: the release the service offers that client, not a download
   * of a release by id); returns at once.
   */
  record(sighting: PendingSighting): void;
  /** Resolves once every sighting recorded so far is written (tests, shutdown). */
  flush(): Promise<void>;
  /**
   * Resolves once the sightings waiting now are written (at most two
   * batches, however busy the recorder is): before a batch of install
   * reports reads what the service answered.
   */
  settle(): Promise<void>;
}

export interface AdoptionRecorderOptions {
  onKvError?: () => void;
  /** New install ids per client address and UTC day counted exactly; the rest in sketches (default 10,000). */
  newIdsPerDay?: number;
  /** Clients waiting for the writer; past this, a new one goes straight into a sketch (default 10,000). */
  maxPending?: number;
  /** The least time between the starts of two batches, in ms (default 1,000). */
  batchMs?: number;
  /** The clock, in ms. */
  now?: () => number;
}

const DEFAULT_NEW_IDS_PER_DAY = 10_000;

/** A sighting as the client API notes it. */
export interface PendingSighting {
  projectId: number;
  releaseId: number;
  identity: string;
  address: string;
  offered: boolean;
}

export function createAdoptionRecorder(
  store: Store,
  options: AdoptionRecorderOptions = {},
): AdoptionRecorder {
  const { newIdsPerDay = DEFAULT_NEW_IDS_PER_DAY, ...writerOptions } = options;
  const writer = createBatchWriter<PendingSighting, SketchPart>({
    ...writerOptions,
    what: "client sightings",
    keyOf: ({ projectId, identity }) => `${projectId} ${identity}`,
    // The latest wins; a download of the release just offered keeps it offered.
    merge(waiting, sighting) {
      if (waiting.offered && waiting.releaseId === sighting.releaseId) sighting.offered = true;
      return sighting;
    },
    overflow(parts, { projectId, releaseId, identity }, at) {
      const day = adoptionDay(at);
      addToSketch(
        sketchPart(parts, { projectId, releaseId, day }).sketch,
        adoptionClientHash(identity),
      );
    },
    write: ({ items, overflow }) =>
      recordSightings(store, { sightings: items.map(keyedSighting), overflow, newIdsPerDay }),
  });
  return {
    record: ({ projectId, releaseId, identity, address, offered }) =>
      writer.add({ projectId, releaseId, identity, address, offered }),
    flush: writer.flush,
    settle: writer.settle,
  };
}

function keyedSighting({ item, at }: Queued<PendingSighting>): KeyedSighting {
  return {
    projectId: item.projectId,
    releaseId: item.releaseId,
    address: item.address,
    offered: item.offered,
    client: adoptionClientHash(item.identity),
    install: item.identity.startsWith("install:"),
    day: adoptionDay(at),
    at,
  };
}
