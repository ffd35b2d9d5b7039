/**
 * The audit-log text of a staged rollout (docs/rollouts.md): what clients
 * get now, for every surface that changes rollouts.
 */
import type { Rollout } from "../releases/types.ts";

/** The audit details of a rollout: what clients get now. */
export function rolloutDetails(rollout: Rollout): string {
  const steps = rollout.schedule.map((step) => `${step.at}=${step.percentage}%`).join(", ");
  return `release ${rollout.release_id} over ${rollout.previous_id}; ${rollout.percentage}%` +
    (rollout.halted ? "; halted" : "") +
    (steps === "" ? "" : `; schedule ${steps}`) +
    (rollout.tester_tag === null ? "" : `; testers ${rollout.tester_tag}`);
}
