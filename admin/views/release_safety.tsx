/**
 * The release safety card of a project's rollout page (docs/rollouts.md "Health
 * gates", "A way back", "Critical updates and a minimum version"): the
 * rollout's gates, what the stage waits on or why it halted, the gate form,
 * roll back (named with both versions), the release policy, and the install
 * reports per release. The stages and the charts are in release_health.tsx.
 */
import type { ReleasePolicy, RollbackPlan } from "../../src/releases/release_policy.ts";
import { failuresOf, type ReportCounts, type ReportReason } from "../../src/reports/reports.ts";
import type { RolloutGateState } from "../../src/rollouts/gate_records.ts";
import type { Rollout } from "../../src/releases/types.ts";
import type { FormError } from "../types.ts";
import {
  Breakable,
  CheckboxField,
  DataTable,
  FormErrorSummary,
  InputField,
  PostButton,
  Time,
} from "./components.tsx";
import { CsrfInput } from "./layout.tsx";
import { type HealthProps, ReleaseHealth } from "./release_health.tsx";

/** The gate and policy forms as entered. */
export interface SafetyValues {
  stages: string;
  min_installs: string;
  min_hours: string;
  advance_below: string;
  halt_at: string;
  minimum_version: string;
}

/** The gates form's numeric fields, below its list of stages. */
const GATE_NUMBER_FIELDS = [
  {
    id: "gates-min-installs",
    name: "min_installs",
    label: "Successful installs per stage",
    inputmode: "numeric",
  },
  { id: "gates-min-hours", name: "min_hours", label: "Hours per stage", inputmode: "decimal" },
  {
    id: "gates-advance-below",
    name: "advance_below",
    label: "Advance while failures are below (%)",
    inputmode: "decimal",
  },
  { id: "gates-halt-at", name: "halt_at", label: "Halt at failures of (%)", inputmode: "decimal" },
] as const;

export const EMPTY_SAFETY_FORM: SafetyValues = {
  stages: "5, 25, 50, 100",
  min_installs: "200",
  min_hours: "6",
  advance_below: "2",
  halt_at: "5",
  minimum_version: "",
};

/** One release's install reports. */
export interface ReleaseReports {
  id: number;
  version: string;
  counts: ReportCounts;
  /** Reports not counted (from installs never offered the release, or past an address's cap), estimated. */
  estimated: ReportCounts;
  reasons: ReadonlyMap<string, ReportReason[]>;
}

export interface ReleaseSafetyCardProps {
  csrfToken?: string;
  /** The account may not change gates, roll back or set the policy (a viewer): it only reads. */
  readOnly?: boolean;
  slug: string;
  rollout: Rollout | null;
  /** The rollout's gates (or the last gated rollout's, completed). */
  gates: RolloutGateState | null;
  /** Whether the gates run the rollout now (its release's, not completed). */
  gated: boolean;
  /** The current stage's figures and what it waits on (null: no running gated stage). */
  stage: { installed: number; failed: number; waiting: string | null } | null;
  /** Why the rollout is halted (the gates' reason or by hand), or null. */
  haltReason: string | null;
  policy: ReleasePolicy;
  /** What "Roll back" would do now, and whether it is offered. */
  plan: RollbackPlan | null;
  /** Active releases, newest first (the critical choice). */
  releases: ReadonlyArray<{ id: number; version: string }>;
  reports: readonly ReleaseReports[];
  /** The release health section: stages, charts, history. */
  health: HealthProps;
  values: SafetyValues;
  error?: FormError | null;
}

export function ReleaseSafetyCard(props: ReleaseSafetyCardProps) {
  const { csrfToken, slug, rollout, gates, gated, policy, values, error, plan } = props;
  const base = `/admin/projects/${slug}/rollout`;
  const gateError = error && isGateField(error.field);
  return (
    <>
      <ReleaseHealth {...props.health} />
      <section class="card" id="release-safety" aria-labelledby="release-safety-title">
        <h2 id="release-safety-title">Release safety</h2>
        <FormErrorSummary error={error} />
        <h3>Health gates</h3>
        {gates === null
          ? <p class="muted" data-gates="none">No health gates.</p>
          : (
            <div data-gates={gated ? (rollout!.halted ? "halted" : "running") : "done"}>
              <p>
                Stages {gates.gates.stages.join("%, ")}%; a stage advances after{" "}
                {gates.gates.min_installs} successful installs and {gates.gates.min_hours}{" "}
                h if failures stay below{" "}
                <span class="nowrap">{gates.gates.advance_below}%</span>; it halts at{" "}
                <span class="nowrap">{gates.gates.halt_at}%</span>.
              </p>
              {props.stage?.waiting && (
                <p data-gate-waiting>
                  The {rollout!.percentage}% stage waits for {props.stage.waiting}.
                </p>
              )}
              {props.haltReason !== null && (
                <p class="flash flash-warning" data-halt-reason>Halted: {props.haltReason}</p>
              )}
            </div>
          )}
        {rollout !== null && !props.readOnly && (
          <details class="fold" open={gateError || gates === null ? true : undefined}>
            <summary>{gates === null ? "Set health gates" : "Change the health gates"}</summary>
            <form method="post" action={`${base}/gates`} class="stack" data-gates-form>
              <CsrfInput token={csrfToken} />
              <InputField
                id="gates-stages"
                name="stages"
                label="Stages"
                hint="Percentages, ascending, comma separated; empty takes the gates off."
                value={values.stages}
                error={error}
              />
              <div class="field-row">
                {GATE_NUMBER_FIELDS.map((field) => (
                  <InputField {...field} value={values[field.name]} error={error} />
                ))}
              </div>
              <button type="submit" class="button">Set gates</button>
            </form>
          </details>
        )}
        {(!props.readOnly || policy.rolled_back !== null) && <h3>A way back</h3>}
        <WayBack
          readOnly={props.readOnly}
          policy={policy}
          plan={plan}
          running={rollout !== null && !rollout.halted && rollout.release_id === plan?.from.id}
          csrfToken={csrfToken}
          base={base}
        />
        {!props.readOnly && <h3>Critical updates and minimum version</h3>}
        {!props.readOnly && (
          <form method="post" action={`${base}/policy`} class="stack" data-policy-form>
            <CsrfInput token={csrfToken} />
            <InputField
              id="policy-minimum-version"
              name="minimum_version"
              label="Minimum supported version"
              optional="optional"
              hint="Clients below it are told to update (X-Minimum-Version); empty clears it."
              value={values.minimum_version || (policy.minimum_version ?? "")}
              error={error}
            />
            <fieldset>
              <legend>Critical releases</legend>
              <div class="check-columns">
                {props.releases.map((release) => (
                  <CheckboxField
                    id={`critical-${release.id}`}
                    name="critical"
                    value={String(release.id)}
                    checked={policy.critical_ids.includes(release.id)}
                    label={release.version}
                  />
                ))}
              </div>
            </fieldset>
            <button type="submit" class="button">Save policy</button>
          </form>
        )}
        <h3>Install reports</h3>
        <ReportsTable reports={props.reports} />
      </section>
    </>
  );
}

/** Whether an error is about a field of the gates form (it opens the form). */
function isGateField(name: string): boolean {
  return name === "stages" || GATE_NUMBER_FIELDS.some((field) => field.name === name);
}

/**
 * The rollback in force, if any, and the button that rolls back the newest release, named
 * with both versions; offered only for the newest release that is not rolled back already.
 */
function WayBack(
  { policy, plan, running, csrfToken, base, readOnly }: {
    /** Only what happened, no button (a viewer). */
    readOnly?: boolean;
    policy: ReleasePolicy;
    plan: RollbackPlan | null;
    /** The release to roll back is a running rollout's (rolling back halts it). */
    running: boolean;
    csrfToken?: string;
    base: string;
  },
) {
  const rolledBack = policy.rolled_back;
  return (
    <>
      {rolledBack !== null && (
        <p data-rolled-back={String(rolledBack.release_id)}>
          Release <strong>{rolledBack.version}</strong> was rolled back at{" "}
          <Time iso={rolledBack.at} />: its clients are offered the release before it.
        </p>
      )}
      {readOnly ? null : plan !== null && plan.offered
        ? (
          <div class="way-back">
            <PostButton
              action={`${base}/rollback`}
              csrfToken={csrfToken}
              label={`Roll back ${plan.from.version} → ${plan.to.version}`}
              buttonClass="button button-danger-quiet"
            />
            <p class="hint">
              Clients are offered <Breakable text={plan.to.version} /> instead of{" "}
              <Breakable text={plan.from.version} />, marked as a rollback (X-Rolled-Back){running
                ? "; its rollout is halted"
                : ""}.
            </p>
          </div>
        )
        : (
          <p class="muted" data-rollback="none">
            {plan === null
              ? "Nothing to roll back: there is no earlier active release to go back to."
              : rolledBack !== null &&
                  [rolledBack.release_id, rolledBack.to_id].includes(plan.from.id)
              ? `No rollback offered: ${rolledBack.version} is rolled back already.`
              : `No rollback offered: ${plan.from.version} is not the newest release.`}
          </p>
        )}
    </>
  );
}

function ReportsTable({ reports }: { reports: readonly ReleaseReports[] }) {
  if (reports.length === 0) {
    return <p class="muted" data-reports="none">No install reports yet.</p>;
  }
  return (
    <div data-reports>
      <DataTable
        columns={["Release", "Installed", "Came back", "Failures", "Estimated", "Latest reasons"]}
      >
        {reports.map((row) => (
          <tr data-reports-release-id={String(row.id)}>
            <td data-label="Release">
              <Breakable text={row.version} />
            </td>
            <td data-label="Installed" class="num" data-installed>{row.counts.installed}</td>
            <td data-label="Came back" class="num" data-returned>{row.counts.returned}</td>
            <td data-label="Failures" class="num" data-failed>{failuresOf(row.counts)}</td>
            <td
              data-label="Estimated"
              class="num"
              title="Reports not counted (from installs never offered the release, or past an address's cap), estimated"
            >
              {row.estimated.installed + failuresOf(row.estimated)}
            </td>
            <td data-label="Latest reasons" class="wrap">
              {[...row.reasons.entries()].map(([kind, reasons]) =>
                `${kind}: ${reasons.slice(0, 3).map((r) => r.reason).join("; ")}`
              ).join(" · ")}
            </td>
          </tr>
        ))}
      </DataTable>
    </div>
  );
}
