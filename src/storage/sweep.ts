/**
 * Removes what a crash left in storage (kill -9, power loss), for every
 * backend through its `Sweepable` side:
 *
 * - uploads cut before their artifact was complete (fs: upload parts whose
 *   writer is gone; s3: unfinished multipart uploads);
 * - complete artifacts no release points at (a crash between storing the
 *   artifact and committing its release).
 *
 * An artifact is removed only when it is older than the backend's `afterMs`,
 * the backend lets the sweep hold it (fs: the upload's writer keeps the
 * file's lock until its release is committed or the file removed, so no live
 * upload of any instance on the host is ever held), and a KV read made after
 * taking that hold finds no release for it. Runs at start and regularly.
 */
import { listStorageKeys } from "../releases/releases.ts";
import type { ArtifactStore, Sweepable } from "./types.ts";
import type { Store } from "../kv/store.ts";

export interface SweepResult {
  /** Upload leftovers removed: fs upload parts, s3 multipart uploads. */
  removedUploads: number;
  /** Complete artifacts no release referenced. */
  removedArtifacts: number;
}

/** The most unreferenced artifacts held at once by one sweep (each is an open file with fs). */
const MAX_HELD = 256;

export async function sweepStore(
  records: Store,
  store: ArtifactStore & { readonly sweeping: Sweepable },
  nowMs = Date.now(),
): Promise<SweepResult> {
  const sweeping = store.sweeping;
  const removedUploads = await sweeping.removeAbandonedUploads();
  const cutoff = nowMs - sweeping.afterMs;
  const old: string[] = [];
  for await (const artifact of sweeping.listArtifacts()) {
    if (artifact.at.getTime() <= cutoff) old.push(artifact.storageKey);
  }
  let removedArtifacts = 0;
  if (old.length === 0) return { removedUploads, removedArtifacts };
  // A first read narrows the list to the suspects: a referenced artifact stays referenced.
  const known = await listStorageKeys(records);
  const suspects = old.filter((storageKey) => !known.has(storageKey));
  for (let i = 0; i < suspects.length; i += MAX_HELD) {
    const held: Array<{ storageKey: string; release(): void }> = [];
    try {
      for (const storageKey of suspects.slice(i, i + MAX_HELD)) {
        const hold = await sweeping.claim(storageKey);
        if (hold !== null) held.push({ storageKey, release: () => hold.release() });
      }
      if (held.length === 0) continue;
      // Read after holding: a release its writer committed before letting go is seen here.
      const referenced = await listStorageKeys(records);
      for (const { storageKey } of held) {
        if (referenced.has(storageKey)) continue;
        await store.remove(storageKey);
        removedArtifacts++;
      }
    } finally {
      for (const hold of held) hold.release();
    }
  }
  return { removedUploads, removedArtifacts };
}

/** A second run this long after the first: fs upload parts younger than 5 s are left at start. */
const SECOND_RUN_MS = 6_000;

/**
 * Sweeps now, once more shortly after (see SECOND_RUN_MS), then every
 * `sweeping.everyMs`; reports each result or error, never two runs at once.
 * Returns a stop function. Does nothing for a store that cannot be swept.
 */
export function scheduleSweeps(
  records: Store,
  store: ArtifactStore,
  report: (result: SweepResult | { error: unknown }) => void,
): () => void {
  const sweeping = store.sweeping;
  if (sweeping === undefined) return () => {};
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      report(await sweepStore(records, store as ArtifactStore & { sweeping: Sweepable }));
    } catch (error) {
      report({ error });
    } finally {
      running = false;
    }
  };
  run();
  const second = setTimeout(run, SECOND_RUN_MS);
  const timer = setInterval(run, sweeping.everyMs);
  Deno.unrefTimer(second);
  Deno.unrefTimer(timer);
  return () => {
    clearTimeout(second);
    clearInterval(timer);
  };
}
