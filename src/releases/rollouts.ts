/**
 * Staged rollouts (docs/rollouts.md): a newer active release offered to a
 * share of a project's clients while the latest pointer stays on the
 * previous release until the rollout completes. The record lives at
 * `["rollouts", projectId]` and is read with the latest pointer in one
 * read-cache entry (latest_view.ts); every write here names that entry.
 * Every write also adds a `rollout.changed` webhook event to its commit
 * (docs/webhooks.md "Events").
 */
import { now, serializedProjectWrite } from "../kv/atomic.ts";
import { changeOp, commitChange } from "../kv/cache.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import { latestReleaseKey, releaseKey, rolloutKey, rolloutsPrefix } from "../kv/keys.ts";
import { planReleaseChange } from "./releases.ts";
import type { Release, Rollout, RolloutStep } from "./types.ts";
import { addWebhookEvent } from "../webhooks/outbox.ts";
import { requireTags, requireTime } from "../projects/validate.ts";
import type { Store } from "../kv/store.ts";

/** What a `rollout.changed` event says happened. */
export type RolloutAction =
  | "started"
  | "halted"
  | "resumed"
  | "widened"
  | "narrowed"
  | "changed"
  | "completed"
  | "ended";

/** A rollout as a `rollout.changed` event names it. */
export function rolloutEventFields(rollout: Rollout): Record<string, unknown> {
  return {
    project_id: rollout.project_id,
    release_id: rollout.release_id,
    previous_id: rollout.previous_id,
    percentage: rollout.percentage,
    halted: rollout.halted,
    tester_tag: rollout.tester_tag,
  };
}

/** Adds the `rollout.changed` event of `action` on `rollout` to a rollout write's commit. */
function addRolloutEvent(
  op: Deno.AtomicOperation,
  action: RolloutAction,
  rollout: Rollout,
): Deno.AtomicOperation {
  return addWebhookEvent(op, "rollout.changed", { action, rollout: rolloutEventFields(rollout) });
}

/** The action a change from `before` to `after` makes. */
function changeAction(before: Rollout, after: Rollout): RolloutAction {
  if (after.halted && !before.halted) return "halted";
  if (!after.halted && before.halted) return "resumed";
  if (after.percentage > before.percentage) return "widened";
  if (after.percentage < before.percentage) return "narrowed";
  return "changed";
}

/** At most this many steps in a schedule. */
export const ROLLOUT_STEPS_MAX = 10;

export interface RolloutInput {
  /** 0–100, at most two decimals. */
  percentage: number;
  schedule?: readonly RolloutStep[];
  /** Keys with this tag get the release whatever the percentage (testers first). */
  tester_tag?: string | null;
}

/** A percentage from a form or JSON: a number 0–100 with at most two decimals; else a ValidationError. */
export function parsePercentage(field: string, raw: unknown): number {
  const value = typeof raw === "string" && raw.trim() !== "" ? Number(raw.trim()) : raw;
  if (
    typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 100 ||
    Math.round(value * 100) !== value * 100
  ) {
    throw new ValidationError(
      field,
      `${field} must be a number from 0 to 100 (two decimals at most)`,
    );
  }
  return value;
}

/**
 * A schedule from text: steps `TIME=PERCENT` separated by commas or new
 * lines (`2026-12-01T09:00Z=10, 2026-12-02T09:00Z=50`), or already parsed.
 */
export function parseSchedule(raw: string | readonly RolloutStep[] | undefined): RolloutStep[] {
  if (raw === undefined) return [];
  const items = typeof raw === "string"
    ? raw.split(/[,\n]/).map((part) => part.trim()).filter((part) => part !== "").map((part) => {
      const at = part.lastIndexOf("=");
      if (at < 1) {
        throw new ValidationError("schedule", "each schedule step is TIME=PERCENT");
      }
      return { at: part.slice(0, at), percentage: part.slice(at + 1) as unknown as number };
    })
    : raw;
  if (!Array.isArray(items) || items.length > ROLLOUT_STEPS_MAX) {
    throw new ValidationError("schedule", `a schedule has at most ${ROLLOUT_STEPS_MAX} steps`);
  }
  return items.map((step) => {
    if (typeof step !== "object" || step === null || typeof step.at !== "string") {
      throw new ValidationError("schedule", "each schedule step has a time `at` and a percentage");
    }
    return {
      at: requireTime("schedule", step.at, {
        message: "a schedule step's time must be an RFC 3339 date and time",
      }),
      percentage: parsePercentage("schedule", step.percentage),
    };
  }).sort((a, b) => a.at < b.at ? -1 : a.at > b.at ? 1 : 0);
}

/** A rollout's tester tag: one tag, or null for none. */
export function parseTesterTag(raw: string | null | undefined): string | null {
  if (raw === undefined || raw === null || raw.trim() === "") return null;
  const tags = requireTags("tester_tag", [raw]);
  if (tags.length !== 1) throw new ValidationError("tester_tag", "give one tag");
  return tags[0];
}

/** The project's rollout record (in force or inert), or null. */
export async function getRollout(store: Store, projectId: number): Promise<Rollout | null> {
  return (await store.kv.get<Rollout>(rolloutKey(projectId))).value;
}

/**
 * Starts (or replaces) the staged rollout of an active release that is not
 * the latest: it reaches `percentage` % of clients, the rest keep the latest.
 */
export async function startRollout(
  store: Store,
  releaseId: number,
  input: RolloutInput,
): Promise<Rollout> {
  const percentage = parsePercentage("percentage", input.percentage);
  const schedule = parseSchedule(input.schedule);
  const tester_tag = parseTesterTag(input.tester_tag);
  const first = (await store.kv.get<Release>(releaseKey(releaseId))).value;
  if (first === null) throw new NotFoundError("release not found");
  const projectId = first.project_id;
  return await serializedProjectWrite(store, projectId, () =>
    commitChange(store, async () => {
      const [releaseEntry, latestEntry, rolloutEntry] = await store.kv.getMany<
        [Release, number | null, Rollout]
      >([releaseKey(releaseId), latestReleaseKey(projectId), rolloutKey(projectId)]);
      const release = releaseEntry.value;
      if (release === null) throw new NotFoundError("release not found");
      if (release.state !== "active") {
        throw new ValidationError("rollout", `the release is ${release.state}: publish it first`);
      }
      const previous = latestEntry.value ?? null;
      if (previous === null) {
        throw new ValidationError("rollout", "the project has no latest release to roll out from");
      }
      if (previous === release.id) {
        throw new ValidationError("rollout", "the release is already the latest for everyone");
      }
      const time = now();
      const rollout: Rollout = {
        project_id: projectId,
        release_id: release.id,
        previous_id: previous,
        percentage,
        schedule,
        halted: false,
        tester_tag,
        started_at: time,
        updated_at: time,
      };
      const changed = [["latest_release", projectId]] as const;
      const op = changeOp(store, changed)
        .check(releaseEntry, latestEntry, rolloutEntry)
        .set(rolloutKey(projectId), rollout);
      const commit = await addRolloutEvent(op, "started", rollout).commit();
      return { commit, value: rollout, changed };
    }));
}

export interface RolloutChange {
  halted?: boolean;
  percentage?: number;
  schedule?: readonly RolloutStep[];
  tester_tag?: string | null;
}

/** Halts, resumes, widens (or narrows) a project's rollout; NotFoundError when there is none. */
export async function changeRollout(
  store: Store,
  projectId: number,
  change: RolloutChange,
): Promise<Rollout> {
  const percentage = change.percentage === undefined
    ? undefined
    : parsePercentage("percentage", change.percentage);
  const schedule = change.schedule === undefined ? undefined : parseSchedule(change.schedule);
  const tester_tag = change.tester_tag === undefined
    ? undefined
    : parseTesterTag(change.tester_tag);
  return await serializedProjectWrite(store, projectId, () =>
    commitChange(store, async () => {
      const entry = await store.kv.get<Rollout>(rolloutKey(projectId));
      if (entry.value === null) throw new NotFoundError("the project has no rollout");
      const rollout: Rollout = {
        ...entry.value,
        ...(change.halted === undefined ? {} : { halted: change.halted }),
        ...(percentage === undefined ? {} : { percentage }),
        ...(schedule === undefined ? {} : { schedule }),
        ...(tester_tag === undefined ? {} : { tester_tag }),
        updated_at: now(),
      };
      const changed = [["latest_release", projectId]] as const;
      const op = changeOp(store, changed).check(entry).set(rolloutKey(projectId), rollout);
      const commit = await addRolloutEvent(op, changeAction(entry.value, rollout), rollout)
        .commit();
      return { commit, value: rollout, changed };
    }));
}

/** Ends a project's rollout without completing it: everyone keeps the latest. */
export async function endRollout(store: Store, projectId: number): Promise<Rollout | null> {
  return await serializedProjectWrite(store, projectId, () =>
    commitChange(store, async () => {
      const entry = await store.kv.get<Rollout>(rolloutKey(projectId));
      const changed = [["latest_release", projectId]] as const;
      const op = changeOp(store, changed).check(entry).delete(rolloutKey(projectId));
      if (entry.value !== null) addRolloutEvent(op, "ended", entry.value);
      return { commit: await op.commit(), value: entry.value, changed };
    }));
}

/**
 * Completes a project's rollout in one commit checked against the rollout:
 * its release becomes the latest for everyone (the chosen latest when an
 * even newer release is active) and the rollout ends.
 */
export async function completeRollout(store: Store, projectId: number): Promise<Release> {
  return await serializedProjectWrite(store, projectId, () =>
    commitChange(store, async () => {
      const entry = await store.kv.get<Rollout>(rolloutKey(projectId));
      if (entry.value === null) throw new NotFoundError("the project has no rollout");
      const releaseEntry = await store.kv.get<Release>(releaseKey(entry.value.release_id));
      if (releaseEntry.value === null) throw new NotFoundError("release not found");
      const write = await planReleaseChange(store, releaseEntry, {
        state: "active",
        makeLatest: true,
        choose: true,
      });
      const changed = [["release", releaseEntry.value.id], ["latest_release", projectId]] as const;
      const op = write(changeOp(store, changed).check(entry)).delete(rolloutKey(projectId));
      addRolloutEvent(op, "completed", entry.value);
      return { commit: await op.commit(), value: write.release, changed };
    }));
}

/** Every project's rollout record (one per project that has one). */
export async function listRollouts(store: Store): Promise<Rollout[]> {
  const rollouts: Rollout[] = [];
  for await (const entry of store.kv.list<Rollout>({ prefix: rolloutsPrefix() })) {
    rollouts.push(entry.value);
  }
  return rollouts;
}
