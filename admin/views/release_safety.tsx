/**
 * The release safety card of a project page (docs/rollouts.md "Health
 * gates", "A way back", "Critical updates and a minimum version"): the
 * rollout's gates with each stage's installs and failures, what the stage
 * waits on or why it halted, the gate form, roll back, the release policy,
 * and the install reports per release with a server-drawn chart of installs
 * and failures per hour (a table with the same numbers follows it).
 */
import type { ReleasePolicy } from "../../src/store/release_policy.ts";
import type { ReportCounts, ReportHour, ReportReason } from "../../src/reports/reports.ts";
import type { RolloutGateState } from "../../src/rollouts/gate_records.ts";
import type { Rollout } from "../../src/store/types.ts";
import type { FormError } from "../types.ts";
import { ChartSvg } from "./chart.tsx";
import { CheckboxField, FormErrorSummary, InputField, PostButton, Time } from "./components.tsx";
import { CsrfInput } from "./layout.tsx";

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
  /** The current stage's figures and what it waits on (null: no running gated stage). */
  stage: { installed: number; failed: number; waiting: string | null } | null;
  policy: ReleasePolicy;
  /** Active releases, newest first (the critical choice). */
  releases: ReadonlyArray<{ id: number; version: string }>;
  reports: readonly ReleaseReports[];
  /** The chart's release and its hours. */
  chart: { version: string; hours: readonly ReportHour[] } | null;
  values: SafetyValues;
  error?: FormError | null;
}

function failures(counts: ReportCounts): number {
  return counts.download + counts.verification + counts.install + counts.crash;
}

export function ReleaseSafetyCard(props: ReleaseSafetyCardProps) {
  const { csrfToken, slug, rollout, gates, stage, policy, values, error } = props;
  const base = `/admin/projects/${slug}/rollout`;
  const gated = gates !== null && rollout !== null && gates.release_id === rollout.release_id &&
    gates.completed_at === null;
  const haltedBy = rollout?.halted
    ? (gated && gates!.halt_reason !== null ? gates!.halt_reason : "halted by hand")
    : null;
  return (
    <section class="card" id="release-safety" aria-labelledby="release-safety-title">
      <h2 id="release-safety-title">Release safety</h2>
      <FormErrorSummary error={error} />
      {gates === null
        ? <p class="muted" data-gates="none">No health gates.</p>
        : (
          <div data-gates={gated ? (rollout!.halted ? "halted" : "running") : "done"}>
            <p>
              Gates: stages {gates.gates.stages.join("%, ")}%; advance after{" "}
              {gates.gates.min_installs} successful installs and {gates.gates.min_hours}{" "}
              h if failures stay below {gates.gates.advance_below}%; halt at {gates.gates.halt_at}%.
            </p>
            {stage?.waiting && (
              <p data-gate-waiting>
                The {rollout!.percentage}% stage waits for {stage.waiting}.
              </p>
            )}
            {haltedBy !== null && (
              <p class="flash flash-warning" data-halt-reason>Halted: {haltedBy}</p>
            )}
            <div class="table-wrap">
              <table class="data-table" data-gate-stages>
                <caption>Stages</caption>
                <thead>
                  <tr>
                    <th scope="col">Stage</th>
                    <th scope="col">Started</th>
                    <th scope="col" class="num">Installs</th>
                    <th scope="col" class="num">Failures</th>
                    <th scope="col">Outcome</th>
                  </tr>
                </thead>
                <tbody>
                  {gates.stages.map((row) => {
                    const live = row.ended_at === null && stage !== null;
                    return (
                      <tr data-stage={String(row.percentage)}>
                        <td data-label="Stage" class="nowrap">{row.percentage}%</td>
                        <td data-label="Started">
                          <Time iso={row.started_at} />
                        </td>
                        <td data-label="Installs" class="num" data-stage-installs>
                          {live ? stage!.installed : row.installed}
                        </td>
                        <td data-label="Failures" class="num" data-stage-failures>
                          {live ? stage!.failed : row.failed}
                        </td>
                        <td data-label="Outcome">{row.outcome ?? (live ? "running" : "")}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          </div>
        )}
      {rollout !== null && !props.readOnly && (
        <form method="post" action={`${base}/gates`} class="stack" data-gates-form>
          <h3>Health gates</h3>
          <CsrfInput token={csrfToken} />
          <InputField
            id="gates-stages"
            name="stages"
            label="Stages"
            hint="Percentages, ascending, comma separated; empty takes the gates off."
            value={values.stages}
            error={error}
          />
          {GATE_NUMBER_FIELDS.map((field) => (
            <InputField {...field} value={values[field.name]} error={error} />
          ))}
          <button type="submit" class="button">Set gates</button>
        </form>
      )}
      {(!props.readOnly || policy.rolled_back !== null) && <h3>A way back</h3>}
      {policy.rolled_back !== null && (
        <p data-rolled-back={String(policy.rolled_back.release_id)}>
          Release {policy.rolled_back.version} was rolled back at{" "}
          <Time iso={policy.rolled_back.at} />.
        </p>
      )}
      {!props.readOnly && (
        <div class="row-actions">
          <PostButton
            action={`${base}/rollback`}
            csrfToken={csrfToken}
            label="Roll back the newest release"
            buttonClass="button button-danger"
          />
        </div>
      )}
      {!props.readOnly && (
        <form method="post" action={`${base}/policy`} class="stack" data-policy-form>
          <h3>Critical updates and minimum version</h3>
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
            {props.releases.map((release) => (
              <CheckboxField
                id={`critical-${release.id}`}
                name="critical"
                value={String(release.id)}
                checked={policy.critical_ids.includes(release.id)}
                label={release.version}
              />
            ))}
          </fieldset>
          <button type="submit" class="button">Save policy</button>
        </form>
      )}
      <ReportsTable reports={props.reports} />
      {props.chart !== null && <ReportChart {...props.chart} />}
    </section>
  );
}

function ReportsTable({ reports }: { reports: readonly ReleaseReports[] }) {
  if (reports.length === 0) {
    return <p class="muted" data-reports="none">No install reports yet.</p>;
  }
  return (
    <div class="table-wrap">
      <table class="data-table" data-reports>
        <caption>Install reports</caption>
        <thead>
          <tr>
            <th scope="col">Release</th>
            <th scope="col" class="num">Installed</th>
            <th scope="col" class="num">Came back</th>
            <th scope="col" class="num">Failures</th>
            <th scope="col" class="num">Estimated (not counted)</th>
            <th scope="col">Latest reasons</th>
          </tr>
        </thead>
        <tbody>
          {reports.map((row) => (
            <tr data-reports-release-id={String(row.id)}>
              <td data-label="Release">{row.version}</td>
              <td data-label="Installed" class="num" data-installed>{row.counts.installed}</td>
              <td data-label="Came back" class="num" data-returned>{row.counts.returned}</td>
              <td data-label="Failures" class="num" data-failed>{failures(row.counts)}</td>
              <td data-label="Estimated" class="num">
                {row.estimated.installed + failures(row.estimated)}
              </td>
              <td data-label="Latest reasons" class="break">
                {[...row.reasons.entries()].map(([kind, reasons]) =>
                  `${kind}: ${reasons.slice(0, 3).map((r) => r.reason).join("; ")}`
                ).join(" · ")}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const WIDTH = 600;
const HEIGHT = 120;

/** Installs and failures per hour as an inline SVG (classes only: the CSP allows no inline style). */
function ReportChart({ version, hours }: { version: string; hours: readonly ReportHour[] }) {
  if (hours.length === 0) return null;
  const first = hours[0].hour;
  const span = Math.max(1, hours.at(-1)!.hour - first + 1);
  const max = Math.max(1, ...hours.map((row) => row.installed + row.failed));
  const slot = WIDTH / span;
  const bar = (value: number) => (value / max) * (HEIGHT - 4);
  return (
    <figure class="chart" data-report-chart>
      <figcaption>Installs and failures of {version} per hour (UTC)</figcaption>
      <ChartSvg class="chart-svg" width={WIDTH} height={HEIGHT}>
        {hours.map((row) => {
          const x = ((row.hour - first) * slot).toFixed(2);
          const installed = bar(row.installed);
          const failed = bar(row.failed);
          return (
            <g data-hour={String(row.hour)}>
              <rect
                x={x}
                y={(HEIGHT - installed - failed).toFixed(2)}
                width={Math.max(1, slot - 1).toFixed(2)}
                height={installed.toFixed(2)}
                class="chart-bar"
              />
              <rect
                x={x}
                y={(HEIGHT - failed).toFixed(2)}
                width={Math.max(1, slot - 1).toFixed(2)}
                height={failed.toFixed(2)}
                class="chart-bar chart-bar-failed"
              />
            </g>
          );
        })}
      </ChartSvg>
      <div class="table-wrap">
        <table class="data-table" data-report-hours>
          <caption>Installs and failures per hour</caption>
          <thead>
            <tr>
              <th scope="col">Hour (UTC)</th>
              <th scope="col" class="num">Installs</th>
              <th scope="col" class="num">Failures</th>
            </tr>
          </thead>
          <tbody>
            {hours.map((row) => (
              <tr>
                <td data-label="Hour (UTC)">
                  <Time iso={new Date(row.hour * 3_600_000).toISOString()} />
                </td>
                <td data-label="Installs" class="num">{row.installed}</td>
                <td data-label="Failures" class="num">{row.failed}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
