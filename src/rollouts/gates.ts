/**
 * Health gates (docs/rollouts.md "Health gates"): every evaluation period one
 * instance (the lease `rollout_gates`, src/kv/leases.ts) looks at each
 * gated rollout's current stage, counted from install reports
 * (src/reports/reports.ts): it halts the rollout when the stage's failure
 * share reaches `halt_at`, advances it to the next stage when the stage has
 * `min_installs` successful installs, has lasted `min_hours` and its failure
 * share is below `advance_below`, and completes it after the last stage.
 * Each change is one checked commit (`applyGateChange`) with its audit entry
 * (actor `rollout gates`), its `rollout.changed` webhook event (`by: "gates"`
 * and the reason) and a step of `uds_rollout_gate_changes_total`.
 */
import { getLatestView } from "../releases/latest_view.ts";
import { claimLease } from "../kv/leases.ts";
import { getReportCounts, type ReportCounts } from "../reports/reports.ts";
import {
  applyGateChange,
  listRolloutGates,
  restartGateStage,
  type RolloutGateState,
  stageFigures,
} from "./gate_records.ts";
import { getRollout } from "../releases/rollouts.ts";
import type { Rollout } from "../releases/types.ts";
import type { Store } from "../kv/store.ts";

/** Failure reports a stage needs before its failure share can halt it. */
const HALT_MIN_REPORTS = 20;
/** The default evaluation period. */
const GATE_EVERY_MS = 30_000;

/** What the gates decide for a stage now. */
export type GateVerdict =
  | { action: "wait"; waiting: string }
  | { action: "advance"; percentage: number; reason: string }
  | { action: "complete"; reason: string }
  | { action: "halt"; reason: string };

function percent(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}

/** The verdict on the current stage of `rollout` (its gates `state`, its release's `counts`). */
export function judgeStage(
  state: RolloutGateState,
  { rollout, counts, nowMs }: { rollout: Rollout; counts: ReportCounts; nowMs: number },
): GateVerdict {
  const { gates } = state;
  const { installed, failed, reporting } = stageFigures(state, counts);
  const share = reporting === 0 ? 0 : failed / reporting;
  const stage = `the ${rollout.percentage}% stage`;
  const figures = `${failed} of ${reporting} reports failed (${percent(share)})`;
  if (reporting >= HALT_MIN_REPORTS && share * 100 >= gates.halt_at) {
    return { action: "halt", reason: `${figures} in ${stage}: at or above ${gates.halt_at}%` };
  }
  const started = Date.parse(state.stages.at(-1)?.started_at ?? rollout.updated_at);
  const hours = (nowMs - started) / 3_600_000;
  if (installed < gates.min_installs) {
    return {
      action: "wait",
      waiting: `${gates.min_installs} successful installs (${installed} so far)`,
    };
  }
  if (hours < gates.min_hours) {
    return {
      action: "wait",
      waiting: `${gates.min_hours} h in the stage (${Math.floor(hours * 10) / 10} h so far)`,
    };
  }
  if (share * 100 >= gates.advance_below) {
    return {
      action: "wait",
      waiting: `failures below ${gates.advance_below}% (${percent(share)} now)`,
    };
  }
  const passed = `${installed} successful installs, ${figures} in ${stage}`;
  const next = gates.stages.find((percentage) => percentage > rollout.percentage);
  if (next === undefined || rollout.percentage >= 100) {
    return { action: "complete", reason: passed };
  }
  return { action: "advance", percentage: next, reason: `${passed}: on to ${next}%` };
}

/** A governed rollout's current stage as its gates read it now. */
export interface StageReading {
  /** The release's report counts. */
  counts: ReportCounts;
  /** The stage's figures: the counts since it started. */
  figures: ReturnType<typeof stageFigures>;
  /** The gates' verdict on the stage now. */
  verdict: GateVerdict;
}

/**
 * The current stage of `rollout` under its gates `state`, with the one
 * verdict the timer acts on and the admin shows; null when the gates do not
 * govern it (they are another release's, or completed).
 */
export async function readStage(
  store: Store,
  { state, rollout, nowMs }: {
    state: RolloutGateState | null;
    rollout: Rollout | null;
    nowMs: number;
  },
): Promise<StageReading | null> {
  if (state === null || rollout === null) return null;
  if (state.release_id !== rollout.release_id || state.completed_at !== null) return null;
  const counts = await getReportCounts(store, rollout.release_id);
  return {
    counts,
    figures: stageFigures(state, counts),
    verdict: judgeStage(state, { rollout, counts, nowMs }),
  };
}

/** One change the gates made. */
export interface GateChange {
  projectId: number;
  action: "advanced" | "halted" | "completed";
  reason: string;
}

/**
 * Looks at every gated rollout once and makes the changes its gates call
 * for; returns them. Rollouts halted or inert are left alone; a rollout a
 * person changed since the gates' last look starts a new stage.
 */
export async function evaluateGates(
  store: Store,
  { nowMs }: { nowMs: number },
): Promise<GateChange[]> {
  const changes: GateChange[] = [];
  for (const state of await listRolloutGates(store)) {
    if (state.completed_at !== null) continue;
    const projectId = state.project_id;
    const rollout = await getRollout(store, projectId);
    if (rollout === null || rollout.release_id !== state.release_id) continue;
    const view = await getLatestView(store, projectId);
    if (view.rollout?.record.release_id !== rollout.release_id) continue; // inert
    const reading = await readStage(store, { state, rollout, nowMs });
    if (reading === null) continue;
    const { counts, verdict } = reading;
    if (rollout.updated_at !== state.seen_updated_at) {
      await restartGateStage(store, { projectId, rollout, counts, nowMs });
      continue;
    }
    if (rollout.halted) continue;
    if (verdict.action === "wait") continue;
    const change = await applyVerdict(store, { projectId, verdict, counts, nowMs });
    if (change !== null) changes.push(change);
  }
  return changes;
}

async function applyVerdict(
  store: Store,
  { projectId, verdict, counts, nowMs }: {
    projectId: number;
    verdict: Exclude<GateVerdict, { action: "wait" }>;
    counts: ReportCounts;
    nowMs: number;
  },
): Promise<GateChange | null> {
  const action = GATE_ACTIONS[verdict.action];
  const applied = await applyGateChange(store, {
    projectId,
    action,
    percentage: verdict.action === "advance" ? verdict.percentage : undefined,
    reason: verdict.reason,
    counts,
    nowMs,
  });
  return applied === null ? null : { projectId, action, reason: applied.reason };
}

const GATE_ACTIONS = { advance: "advanced", halt: "halted", complete: "completed" } as const;

/** The running evaluator of one instance. */
export interface GateEvaluator {
  /** One evaluation now, if this instance gets the lease (tests; the timer calls it). */
  tick(): Promise<GateChange[]>;
  stop(): void;
}

/**
 * Evaluates the gates every `everyMs` on the instance holding the lease
 * `rollout_gates` (claimed for two periods, renewed by each tick).
 */
export function startGateEvaluator(
  store: Store,
  options: {
    holder: string;
    everyMs?: number;
    now?: () => number;
    report?: (error: unknown) => void;
    /** Whether to run a timer (false: only `tick` evaluates). */
    timer?: boolean;
  },
): GateEvaluator {
  const { holder, everyMs = GATE_EVERY_MS, now = Date.now, report = () => {} } = options;
  let running: Promise<GateChange[]> | null = null;
  const tick = async (): Promise<GateChange[]> => {
    if (!(await claimLease(store, "rollout_gates", { holder, ttlMs: 2 * everyMs }))) return [];
    return await evaluateGates(store, { nowMs: now() });
  };
  const timer = options.timer === false ? undefined : setInterval(() => {
    if (running !== null) return;
    running = tick().catch((error) => {
      report(error);
      return [];
    }).finally(() => running = null);
  }, everyMs);
  if (timer !== undefined) Deno.unrefTimer(timer);
  return {
    tick,
    stop: () => clearInterval(timer),
  };
}
