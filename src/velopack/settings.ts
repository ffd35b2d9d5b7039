/**
 * A project's settings of the Velopack feed's server-made deltas (the admin's
 * project page): how many of the newest older releases get a delta to each
 * new release.
 */
import { retryWhileLocked } from "../kv/atomic.ts";
import { ValidationError } from "../kv/errors.ts";
import { velopackSettingsKey } from "../kv/keys.ts";
import type { Store } from "../kv/store.ts";

export interface VelopackSettings {
  /** How many of the newest older releases get a delta to each new release. */
  deltas_kept: number;
}

export const DEFAULT_DELTAS_KEPT = 10;
export const MAX_DELTAS_KEPT = 50;

/** The "older releases to build from" field (`deltas_kept`) as entered: 0 (none) to MAX_DELTAS_KEPT. */
export function parseDeltasKept(raw: string): number {
  const text = raw.trim();
  const value = Number(text);
  if (!/^[0-9]{1,3}$/.test(text) || value > MAX_DELTAS_KEPT) {
    throw new ValidationError(
      "deltas_kept",
      `older releases to build from must be a whole number from 0 to ${MAX_DELTAS_KEPT}`,
    );
  }
  return value;
}

export async function getVelopackSettings(
  store: Store,
  projectId: number,
): Promise<VelopackSettings> {
  const found = (await store.kv.get<VelopackSettings>(velopackSettingsKey(projectId))).value;
  return found ?? { deltas_kept: DEFAULT_DELTAS_KEPT };
}

/** Stores a project's settings; hands back the ones before. */
export async function setVelopackSettings(
  store: Store,
  projectId: number,
  settings: VelopackSettings,
): Promise<VelopackSettings> {
  const before = await getVelopackSettings(store, projectId);
  await retryWhileLocked(() => store.kv.set(velopackSettingsKey(projectId), settings));
  return before;
}
