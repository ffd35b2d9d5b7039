/**
 * Records client sightings off the request path (docs/rollouts.md
 * "Adoption"): a request only puts its client's latest sighting into this
 * instance's pending map (no KV round trip, no hashing); in the background
 * the whole map is taken as one batch and written (adoption_batch.ts), at
 * most one batch a `batchMs`, and what arrives meanwhile waits for the next.
 * Nothing here decides that a sighting needs no write: the KV's marker
 * does, so instances never disagree about a client.
 */
import { createBatchRunner } from "../lib/batch_runner.ts";
import { addToSketch } from "../lib/hyperloglog.ts";
import { adoptionClientHash, adoptionDay } from "./adoption.ts";
import {
  type KeyedSighting,
  recordSightings,
  type SketchPart,
  sketchPartOf,
} from "./adoption_batch.ts";
import type { Store } from "../kv/store.ts";

/** Records client sightings off the hot path (one per instance, made by the app). */
export interface AdoptionRecorder {
  /**
   * Notes that `identity`, asking from `address`, was answered `releaseId`
   * (`offered`: the release the service offers that client, not a download
   * of a release by id); returns at once.
   */
  record(sighting: {
    projectId: number;
    releaseId: number;
    identity: string;
    address: string;
    offered: boolean;
  }): void;
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

interface PendingSighting {
  projectId: number;
  releaseId: number;
  identity: string;
  address: string;
  offered: boolean;
  at: number;
  /** Whether a batch that held it could not be written (it is tried once more). */
  retried?: boolean;
}

export function createAdoptionRecorder(
  store: Store,
  options: AdoptionRecorderOptions = {},
): AdoptionRecorder {
  const {
    onKvError = () => {},
    newIdsPerDay = DEFAULT_NEW_IDS_PER_DAY,
    maxPending = 10_000,
    batchMs = 1_000,
    now = Date.now,
  } = options;
  let pending = new Map<string, PendingSighting>();
  let overflow = new Map<string, SketchPart>();

  const runner = createBatchRunner(async () => {
    const batch = pending;
    const parts = overflow;
    pending = new Map();
    overflow = new Map();
    await recordSightings(store, {
      sightings: [...batch.values()].map(keyedSighting),
      overflow: parts,
      newIdsPerDay,
    }).catch((error) => {
      onKvError();
      console.error("could not record client sightings (tried once more):", error);
      // Once more in the next batch, unless the client was seen again meanwhile: a write that
      // went through before the failure is not repeated (the markers decide).
      for (const [client, sighting] of batch) {
        if (sighting.retried || pending.has(client) || pending.size >= maxPending) continue;
        pending.set(client, { ...sighting, retried: true });
      }
    });
  }, { batchMs, pending: () => pending.size > 0 || overflow.size > 0 });

  return {
    record({ projectId, releaseId, identity, address, offered }) {
      const at = now();
      const client = `${projectId} ${identity}`;
      const waiting = pending.get(client);
      if (waiting === undefined && pending.size >= maxPending) {
        const day = adoptionDay(at);
        addToSketch(
          sketchPartOf(overflow, { projectId, releaseId, day }).sketch,
          adoptionClientHash(identity),
        );
      } else {
        // The latest wins; a download of the release just offered keeps it offered.
        const stillOffered = offered ||
          (waiting !== undefined && waiting.offered && waiting.releaseId === releaseId);
        pending.set(client, { projectId, releaseId, identity, address, offered: stillOffered, at });
      }
      runner.request();
    },
    flush: runner.flush,
    settle: runner.settle,
  };
}

function keyedSighting(pending: PendingSighting): KeyedSighting {
  return {
    projectId: pending.projectId,
    releaseId: pending.releaseId,
    address: pending.address,
    offered: pending.offered,
    client: adoptionClientHash(pending.identity),
    install: pending.identity.startsWith("install:"),
    day: adoptionDay(pending.at),
    at: pending.at,
  };
}
