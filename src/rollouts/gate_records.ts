/**
 * A rollout's health gates as stored (docs/rollouts.md "Health gates"): the
 * gates, the stage the rollout is in (its start and the release's report
 * counts then, so a stage's figures are the counts since), the stages
 * passed, and why the gates halted it. One record `["rollout_gates",
 * projectId]`; a change the gates make to the rollout (advance, halt,
 * complete) is one commit checked against both records, naming the
 * latest-release read-cache entry like every rollout write, with its
 * `rollout.changed` webhook event and a `sum` on the project's counter of
 * gate changes (the Prometheus series).
 */
import {
  commitWithRetry,
  NOTHING_TO_WRITE,
  now,
  retryWhileLocked,
  serializedProjectWrite,
} from "../kv/atomic.ts";
import { addAuditEntry } from "../kv/audit.ts";
import { changeOp, commitChange } from "../kv/cache.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import {
  projectKey,
  releaseKey,
  rolloutGateChangeKey,
  rolloutGateChangesPrefix,
  rolloutGatesKey,
  rolloutGatesPrefix,
  rolloutKey,
} from "../kv/keys.ts";
import { planReleaseChange, type ReleaseChangeWrite } from "../releases/releases.ts";
import { failuresOf, getReportCounts, type ReportCounts } from "../reports/reports.ts";
import { rolloutEventFields } from "../releases/rollouts.ts";
import type { Project } from "../projects/types.ts";
import type { Release, Rollout } from "../releases/types.ts";
import { addWebhookEvent } from "../webhooks/outbox.ts";
import type { Store } from "../kv/store.ts";

/** The gates of a rollout. */
export interface RolloutGates {
  /** The percentages the rollout moves through, ascending; past the last one it completes. */
  stages: number[];
  /** Successful installs (reports `installed`) a stage needs before it may advance. */
  min_installs: number;
  /** Hours a stage lasts at least before it may advance. */
  min_hours: number;
  /** A stage advances only while its failure share (%) is below this. */
  advance_below: number;
  /** A stage halts once its failure share (%) is at or above this. */
  halt_at: number;
}

/** A stage as it went (or goes). */
export interface GateStage {
  percentage: number;
  started_at: string;
  /** Null while it runs. */
  ended_at: string | null;
  /** Counted reports in the stage (set when it ends; live ones are computed). */
  installed: number;
  failed: number;
  /** How it ended: `advanced`, `halted`, `completed`, `changed` (by hand), or null. */
  outcome: string | null;
}

export interface RolloutGateState {
  project_id: number;
  /** The rollout's release these gates belong to (a replaced rollout leaves them inert). */
  release_id: number;
  gates: RolloutGates;
  /** The release's counts when the current stage started. */
  base: { installed: number; failed: number };
  /** The rollout's `updated_at` after the gates' last look: another value is a change by hand. */
  seen_updated_at: string;
  /** Why the gates halted the rollout (null: not halted by the gates). */
  halt_reason: string | null;
  /** Set once the gates completed the rollout. */
  completed_at: string | null;
  /** Every stage so far, the current one last. */
  stages: GateStage[];
}

/** Stages at most. */
const GATE_STAGES_MAX = 10;
const MAX_HOURS = 24 * 90;
const MAX_INSTALLS = 10_000_000;

/** Gates from a form (text fields) or JSON (numbers, `stages` as a list or text); a ValidationError names the field. */
export function parseGates(raw: Record<string, unknown>): RolloutGates {
  const stagesRaw = raw.stages;
  const list = typeof stagesRaw === "string"
    ? stagesRaw.split(/[,\s]+/).filter((part) => part !== "")
    : stagesRaw;
  if (!Array.isArray(list) || list.length === 0 || list.length > GATE_STAGES_MAX) {
    throw new ValidationError(
      "stages",
      `stages: 1 to ${GATE_STAGES_MAX} percentages, ascending (e.g. 1, 10, 50, 100)`,
    );
  }
  const stages = list.map((value) => share("stages", value));
  for (let i = 1; i < stages.length; i++) {
    if (stages[i] <= stages[i - 1]) {
      throw new ValidationError("stages", "stages must be ascending percentages");
    }
  }
  if (stages[0] <= 0) throw new ValidationError("stages", "a stage must be above 0%");
  const min_installs = number("min_installs", raw.min_installs, { max: MAX_INSTALLS });
  if (!Number.isInteger(min_installs)) {
    throw new ValidationError("min_installs", "min_installs must be a whole number");
  }
  const min_hours = number("min_hours", raw.min_hours, { max: MAX_HOURS });
  const advance_below = share("advance_below", raw.advance_below);
  const halt_at = share("halt_at", raw.halt_at);
  if (halt_at < advance_below) {
    throw new ValidationError("halt_at", "halt_at must be at least advance_below");
  }
  if (halt_at <= 0) throw new ValidationError("halt_at", "halt_at must be above 0%");
  return { stages, min_installs, min_hours, advance_below, halt_at };
}

function number(field: string, raw: unknown, { max }: { max: number }): number {
  const value = typeof raw === "string" && raw.trim() !== "" ? Number(raw.trim()) : raw;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > max) {
    throw new ValidationError(field, `${field} must be a number from 0 to ${max}`);
  }
  return value;
}

function share(field: string, raw: unknown): number {
  const value = number(field, raw, { max: 100 });
  if (Math.round(value * 100) !== value * 100) {
    throw new ValidationError(field, `${field} must be a percentage with two decimals at most`);
  }
  return value;
}

/** The gates of a project's rollout as stored, or null. */
export async function getRolloutGates(
  store: Store,
  projectId: number,
): Promise<RolloutGateState | null> {
  return (await store.kv.get<RolloutGateState>(rolloutGatesKey(projectId))).value;
}

/** Every project's gate record (one per project that has one). */
export async function listRolloutGates(store: Store): Promise<RolloutGateState[]> {
  const states: RolloutGateState[] = [];
  for await (const entry of store.kv.list<RolloutGateState>({ prefix: rolloutGatesPrefix() })) {
    states.push(entry.value);
  }
  return states;
}

function countsBase(counts: ReportCounts) {
  return { installed: counts.installed, failed: failuresOf(counts) };
}

function openStage(percentage: number, at: string): GateStage {
  return { percentage, started_at: at, ended_at: null, installed: 0, failed: 0, outcome: null };
}

/**
 * Puts gates on a project's running rollout (or replaces them; null takes
 * them off). Its current percentage is the first stage, starting now.
 */
export async function setRolloutGates(
  store: Store,
  { projectId, gates, nowMs = Date.now() }: {
    projectId: number;
    gates: RolloutGates | null;
    /** When the first stage starts (default now). */
    nowMs?: number;
  },
): Promise<RolloutGateState | null> {
  const rollout = (await store.kv.get<Rollout>(rolloutKey(projectId))).value;
  if (rollout === null) throw new NotFoundError("the project has no rollout");
  if (gates === null) {
    await retryWhileLocked(() => store.kv.delete(rolloutGatesKey(projectId)));
    return null;
  }
  const time = new Date(nowMs).toISOString();
  const state: RolloutGateState = {
    project_id: projectId,
    release_id: rollout.release_id,
    gates,
    base: countsBase(await getReportCounts(store, rollout.release_id)),
    seen_updated_at: rollout.updated_at,
    halt_reason: null,
    completed_at: null,
    stages: [openStage(rollout.percentage, time)],
  };
  await retryWhileLocked(() => store.kv.set(rolloutGatesKey(projectId), state));
  return state;
}

/** The figures of the current stage: the release's counts since it started. */
export function stageFigures(state: RolloutGateState, counts: ReportCounts) {
  const installed = Math.max(0, counts.installed - state.base.installed);
  const failed = Math.max(0, failuresOf(counts) - state.base.failed);
  return { installed, failed, reporting: installed + failed };
}

/**
 * A person changed the rollout (resumed, widened, narrowed): the current
 * stage ends as `changed` and a new one starts now from its percentage.
 */
export async function restartGateStage(
  store: Store,
  { projectId, rollout, counts, nowMs }: {
    projectId: number;
    rollout: Rollout;
    counts: ReportCounts;
    nowMs: number;
  },
): Promise<void> {
  const time = new Date(nowMs).toISOString();
  await updateGateState(store, projectId, (_op, gates) => {
    const state = closeStage(gates, { counts, outcome: "changed", at: time });
    state.stages.push(openStage(rollout.percentage, time));
    state.base = countsBase(counts);
    state.seen_updated_at = rollout.updated_at;
    if (!rollout.halted) state.halt_reason = null;
    return state;
  });
}

/** Rewrites a project's gate record (none: nothing) in one checked commit; `change` may add to it. */
async function updateGateState(
  store: Store,
  projectId: number,
  change: (op: Deno.AtomicOperation, state: RolloutGateState) => RolloutGateState,
): Promise<void> {
  const key = rolloutGatesKey(projectId);
  await commitWithRetry(async () => {
    const entry = await store.kv.get<RolloutGateState>(key);
    if (entry.value === null) return { commit: NOTHING_TO_WRITE, value: 0 };
    const op = store.kv.atomic().check(entry);
    op.set(key, change(op, entry.value));
    return { commit: await op.commit(), value: 0 };
  });
}

function closeStage(
  state: RolloutGateState,
  { counts, outcome, at }: { counts: ReportCounts; outcome: string; at: string },
): RolloutGateState {
  const figures = stageFigures(state, counts);
  const stages = state.stages.slice(-GATE_STAGES_MAX * 3);
  const last = stages.at(-1);
  if (last !== undefined && last.ended_at === null) {
    stages[stages.length - 1] = {
      ...last,
      ended_at: at,
      installed: figures.installed,
      failed: figures.failed,
      outcome,
    };
  }
  return { ...state, stages };
}

/** A gate decision as `applyGateChange` takes it. */
export interface GateChangeInput {
  projectId: number;
  action: "advanced" | "halted" | "completed";
  /** The next stage's percentage (`advanced`). */
  percentage?: number;
  reason: string;
  counts: ReportCounts;
  /** The evaluation's time: when the next stage starts (or the last one ends). */
  nowMs: number;
}

/** A gate decision as committed: the rollout after it (before it for `completed`) and the reason given. */
export interface AppliedGateChange {
  rollout: Rollout;
  /** For `completed`: the release that became the latest. */
  release: Release | null;
  reason: string;
}

/**
 * Applies a gate decision in one commit checked against the rollout, its
 * gate record and (`completed`) the release and latest pointer: `advanced`
 * to `percentage`, `halted` for `reason`, `completed` (the release becomes
 * the latest as with Make latest, the rollout ends). The same commit holds
 * the `rollout.changed` event (`by: "gates"`, the reason), the audit entry
 * (actor `rollout gates`) and the step of the change counter. Null when the
 * rollout was halted, changed or replaced since the gates read it (the next
 * evaluation looks again).
 */
export async function applyGateChange(
  store: Store,
  change: GateChangeInput,
): Promise<AppliedGateChange | null> {
  const { projectId, action, counts } = change;
  return await serializedProjectWrite(store, projectId, () =>
    commitChange(store, async () => {
      const [rolloutEntry, gatesEntry, projectEntry] = await store.kv.getMany<
        [Rollout, RolloutGateState, Project]
      >([rolloutKey(projectId), rolloutGatesKey(projectId), projectKey(projectId)]);
      const before = rolloutEntry.value;
      const gates = gatesEntry.value;
      const nothing = { commit: NOTHING_TO_WRITE, value: null, changed: [] };
      if (
        before === null || gates === null || before.release_id !== gates.release_id ||
        before.halted || before.updated_at !== gates.seen_updated_at
      ) {
        return nothing;
      }
      const stageTime = new Date(change.nowMs).toISOString();
      let state = closeStage(gates, { counts, outcome: action, at: stageTime });
      let rollout: Rollout = before;
      let write: ReleaseChangeWrite | null = null;
      let reason = change.reason;
      if (action === "completed") {
        const releaseEntry = await store.kv.get<Release>(releaseKey(before.release_id));
        if (releaseEntry.value === null || releaseEntry.value.state !== "active") return nothing;
        write = await planReleaseChange(store, releaseEntry, {
          state: "active",
          makeLatest: true,
          choose: true,
        });
        reason = `${reason}: release ${before.release_id} is latest`;
        state = { ...state, completed_at: stageTime };
      } else {
        rollout = {
          ...before,
          ...(action === "halted" ? { halted: true } : { percentage: change.percentage! }),
          updated_at: now(),
        };
        if (action === "advanced") {
          state.stages.push(openStage(rollout.percentage, stageTime));
          state.base = countsBase(counts);
        } else {
          state.halt_reason = reason;
        }
        state.seen_updated_at = rollout.updated_at;
      }
      const changed = action === "completed"
        ? [["release", before.release_id], ["latest_release", projectId]] as const
        : [["latest_release", projectId]] as const;
      const op = changeOp(store, changed)
        .check(rolloutEntry, gatesEntry)
        .set(rolloutGatesKey(projectId), state)
        .sum(rolloutGateChangeKey(projectId, action), 1n);
      if (write === null) op.set(rolloutKey(projectId), rollout);
      else write(op).delete(rolloutKey(projectId));
      addGateEvent(op, { action: GATE_EVENT_ACTIONS[action], rollout, reason });
      addAuditEntry(op, {
        actor: GATE_ACTOR,
        action: `rollout.gate_${action}`,
        target: `project ${projectId}`,
        details: `project ${projectEntry.value?.slug ?? projectId}; ${reason}`,
        address: "",
      }, change.nowMs);
      return {
        commit: await op.commit(),
        value: { rollout, release: write?.release ?? null, reason },
        changed,
      };
    }));
}

/** Who a gate change's audit entry names. */
const GATE_ACTOR = "rollout gates";

/** The `rollout.changed` action of each gate change. */
const GATE_EVENT_ACTIONS = {
  advanced: "widened",
  halted: "halted",
  completed: "completed",
} as const;

/** The `rollout.changed` event of a gate change: `by: "gates"` and the reason. */
function addGateEvent(
  op: Deno.AtomicOperation,
  { action, rollout, reason }: { action: string; rollout: Rollout; reason: string },
): void {
  addWebhookEvent(op, "rollout.changed", {
    action,
    by: "gates",
    reason,
    rollout: rolloutEventFields(rollout),
  });
}

/** The gates' changes per project and action (`advanced`, `halted`, `completed`). */
export async function listGateChangeCounts(
  store: Store,
): Promise<Array<{ projectId: number; action: string; count: number }>> {
  const rows: Array<{ projectId: number; action: string; count: number }> = [];
  for await (const entry of store.kv.list<Deno.KvU64>({ prefix: rolloutGateChangesPrefix() })) {
    const [, projectId, action] = entry.key as [string, number, string];
    rows.push({ projectId, action, count: Number(entry.value.value) });
  }
  return rows;
}
