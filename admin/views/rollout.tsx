/**
 * The staged rollout card of a project page (docs/rollouts.md): the rollout
 * in force with halt, resume, widen, complete and end, or the form that
 * starts one for an active release that is not the latest.
 */
import type { Child } from "hono/jsx";
import type { Release, Rollout } from "../../src/releases/types.ts";
import { ROLLOUT_STEPS_MAX } from "../../src/releases/rollouts.ts";
import { type RolloutValues, scheduleRows } from "../forms_rollout.ts";
import type { FormError } from "../types.ts";
import {
  Breakable,
  FieldsetField,
  FormErrorSummary,
  InputField,
  PostButton,
  Time,
} from "./components.tsx";
import { CsrfInput } from "./layout.tsx";

/** Empty schedule rows the form offers beyond the steps it already has. */
const BLANK_SCHEDULE_ROWS = 2;

export interface RolloutCardProps {
  csrfToken?: string;
  /** The account may not change rollouts (a viewer): the card only tells. */
  readOnly?: boolean;
  slug: string;
  /** The project's rollout record, or null. */
  rollout: Rollout | null;
  /** Whether it is in force (its previous release is still the latest, its release active). */
  live: boolean;
  /** The percentage in force now, schedule steps reached included, while it runs. */
  percentageNow?: number;
  /** Versions of the releases it names, by id. */
  versions: ReadonlyMap<number, string>;
  /** Active releases that are not the latest: what a rollout can start for. */
  candidates: readonly Release[];
  values: RolloutValues;
  error?: FormError | null;
  /** The stage's progress bar, shown first. */
  progress?: Child;
}

/** A rollout's schedule as `TIME=PERCENT` steps, comma separated (what the form's rows post). */
export function scheduleText(rollout: Rollout): string {
  return rollout.schedule.map((step) => `${step.at}=${step.percentage}`).join(", ");
}

/** The change form starts from the rollout as it is. */
function currentValues(rollout: Rollout): RolloutValues {
  return {
    release_id: String(rollout.release_id),
    percentage: String(rollout.percentage),
    schedule: scheduleText(rollout),
    tester_tag: rollout.tester_tag ?? "",
  };
}

function versionOf(versions: ReadonlyMap<number, string>, id: number): string {
  return versions.get(id) ?? `release ${id}`;
}

/** The rollout's stage at a glance: a progress bar, its gated stages, what it waits on. */
export interface RolloutProgressProps {
  rollout: Rollout | null;
  live: boolean;
  percentageNow?: number;
  versions: ReadonlyMap<number, string>;
  /** The gated stages (percentages), when health gates run the rollout. */
  stages: readonly number[] | null;
  /** What the current stage waits on (judged by the gates), if anything. */
  waiting: string | null;
  /** Why it is halted: the gates' reason, or by hand. */
  haltReason: string | null;
}

export function RolloutProgress(
  { rollout, live, percentageNow, versions, stages, waiting, haltReason }: RolloutProgressProps,
) {
  if (rollout === null || !live) return null;
  const percentage = percentageNow ?? rollout.percentage;
  const shown = rollout.halted ? rollout.percentage : percentage;
  return (
    <div
      class={rollout.halted ? "rollout-progress is-halted" : "rollout-progress"}
      data-rollout-progress={rollout.halted ? "halted" : "running"}
    >
      <p class="rollout-progress-head">
        <span>
          <strong>
            <Breakable text={versionOf(versions, rollout.release_id)} />
          </strong>{" "}
          {rollout.halted ? "halted at" : "reaches"}{" "}
          <strong class="nowrap" data-progress-percentage>{shown}%</strong> of installs
        </span>
        {stages !== null && (
          <span class="muted nowrap">
            stage {Math.max(1, stages.filter((stage) => stage <= rollout.percentage).length)} of
            {" "}
            {stages.length}
          </span>
        )}
      </p>
      <progress max={100} value={shown} aria-label={`${shown}% of installs`}></progress>
      {stages !== null && (
        <ol class="stage-steps" aria-label="Gated stages">
          {stages.map((stage) => (
            <li
              class={stage < rollout.percentage
                ? "is-done"
                : stage === rollout.percentage
                ? "is-current"
                : ""}
              aria-current={stage === rollout.percentage ? "step" : undefined}
            >
              {stage}%
            </li>
          ))}
        </ol>
      )}
      {haltReason !== null && (
        <p class="flash flash-warning" data-progress-halt>Halted: {haltReason}</p>
      )}
      {haltReason === null && waiting !== null && (
        <p class="hint" data-progress-waiting>
          The {rollout.percentage}% stage waits for {waiting}.
        </p>
      )}
    </div>
  );
}

export function RolloutCard(props: RolloutCardProps) {
  const { csrfToken, slug, rollout, live, percentageNow, versions, candidates, values, error } =
    props;
  const base = `/admin/projects/${slug}/rollout`;
  return (
    <section class="card" id="rollout" aria-labelledby="rollout-title">
      <h2 id="rollout-title">Staged rollout</h2>
      <FormErrorSummary error={error} />
      {props.progress}
      {rollout === null
        ? <p class="muted" data-rollout="none">No rollout: every client gets the latest release.</p>
        : (
          <div
            data-rollout={!live ? "inert" : rollout.halted ? "halted" : "running"}
            data-rollout-release-id={String(rollout.release_id)}
          >
            <p>
              Release <strong>{versionOf(versions, rollout.release_id)}</strong> reaches{" "}
              <strong data-rollout-percentage>{percentageNow ?? rollout.percentage}%</strong>{" "}
              of clients; the others keep{" "}
              <strong>{versionOf(versions, rollout.previous_id)}</strong>.
              {rollout.halted && " Halted: every client gets the previous release."}
              {!live &&
                " Inert: its previous release is no longer the latest or its release is not active."}
            </p>
            {rollout.schedule.length > 0 && <ScheduleList rollout={rollout} />}
            {rollout.tester_tag !== null && (
              <p class="hint">
                Keys with the rollout tag <code>{rollout.tester_tag}</code> always get it.
              </p>
            )}
            {!props.readOnly && (
              <>
                <div class="actions rollout-actions">
                  <PostButton
                    action={`${base}/${rollout.halted ? "resume" : "halt"}`}
                    csrfToken={csrfToken}
                    label={rollout.halted ? "Resume" : "Halt"}
                    buttonClass={rollout.halted ? "button" : "button button-danger"}
                  />
                  <PostButton
                    action={`${base}/complete`}
                    csrfToken={csrfToken}
                    label="Complete"
                    buttonClass="button"
                  />
                  <PostButton
                    action={`${base}/end`}
                    csrfToken={csrfToken}
                    label="End"
                    buttonClass="button"
                  />
                </div>
                <details class="fold" open={error ? true : undefined}>
                  <summary>Change the percentage, schedule or tester tag</summary>
                  <form method="post" action={`${base}/change`} class="stack">
                    <CsrfInput token={csrfToken} />
                    <RolloutFields
                      values={error ? values : currentValues(rollout)}
                      error={error}
                      prefix="rollout-change"
                    />
                    <button type="submit" class="button">Change rollout</button>
                  </form>
                </details>
              </>
            )}
          </div>
        )}
      {candidates.length > 0 && !props.readOnly && (
        <details
          class="fold"
          open={rollout === null || (error && values.release_id !== "") ? true : undefined}
        >
          <summary>{rollout === null ? "Start a rollout" : "Replace with a new rollout"}</summary>
          <form method="post" action={base} class="stack" data-rollout-start>
            <CsrfInput token={csrfToken} />
            <div class="field">
              <label for="rollout-release">Release</label>
              <select id="rollout-release" name="release_id">
                {candidates.map((release) => (
                  <option
                    value={String(release.id)}
                    selected={values.release_id === String(release.id)}
                  >
                    {release.version} (id {release.id})
                  </option>
                ))}
              </select>
            </div>
            <RolloutFields values={values} error={error} prefix="rollout-start" />
            <button type="submit" class="button button-primary">Start rollout</button>
          </form>
        </details>
      )}
    </section>
  );
}

function RolloutFields(
  { values, error, prefix }: { values: RolloutValues; error?: FormError | null; prefix: string },
) {
  return (
    <>
      <InputField
        id={`${prefix}-percentage`}
        name="percentage"
        label="Percentage of clients"
        hint="0 to 100; widening only adds clients."
        value={values.percentage}
        type="number"
        min="0"
        max="100"
        step="any"
        inputmode="decimal"
        error={error}
      />
      <ScheduleFields schedule={values.schedule} error={error} prefix={prefix} />
      <InputField
        id={`${prefix}-tester-tag`}
        name="tester_tag"
        label="Tester tag"
        optional="optional"
        hint="API keys with this among their rollout tags get the release whatever the percentage."
        value={values.tester_tag}
        error={error}
      />
    </>
  );
}

/**
 * The schedule as rows of a time (datetime-local, read as UTC, with the
 * admin's local time beside it by admin.js) and a percentage: the steps it
 * has and two empty rows (save, and come back for more).
 */
function ScheduleFields(
  { schedule, error, prefix }: { schedule: string; error?: FormError | null; prefix: string },
) {
  const rows = scheduleRows(schedule);
  const blanks = Math.max(0, Math.min(BLANK_SCHEDULE_ROWS, ROLLOUT_STEPS_MAX - rows.length));
  const all = [...rows, ...Array.from({ length: blanks }, () => ({ at: "", percentage: "" }))];
  const id = `${prefix}-schedule`;
  return (
    <FieldsetField
      id={id}
      name="schedule"
      legend={
        <>
          Schedule <span class="optional">optional</span>
        </>
      }
      error={error}
    >
      <p class="hint">
        From each time on, at least that percentage of clients get the release. Times are in UTC;
        your own time shows beside each. Empty rows are left out.
      </p>
      <div class="schedule-steps">
        {all.map((row, i) => (
          <div class="schedule-step" data-schedule-step={i}>
            <div class="field">
              <label for={`${id}-at-${i}`}>Step {i + 1}: time (UTC)</label>
              <input
                id={`${id}-at-${i}`}
                name="schedule_at"
                type="datetime-local"
                value={row.at}
                data-utc-local={`${id}-at-${i}-local`}
                aria-describedby={`${id}-at-${i}-local`}
              />
              <output id={`${id}-at-${i}-local`} class="hint" aria-live="polite"></output>
            </div>
            <div class="field">
              <label for={`${id}-percentage-${i}`}>Step {i + 1}: percentage</label>
              <input
                id={`${id}-percentage-${i}`}
                name="schedule_percentage"
                type="number"
                min="0"
                max="100"
                step="any"
                inputmode="decimal"
                value={row.percentage}
              />
            </div>
          </div>
        ))}
      </div>
    </FieldsetField>
  );
}

/** The rollout's schedule: each step in the admin's time (admin.js) with UTC beside it. */
function ScheduleList({ rollout }: { rollout: Rollout }) {
  return (
    <div class="schedule-list">
      <p class="hint">Schedule:</p>
      <ul data-rollout-schedule>
        {rollout.schedule.map((step) => (
          <li>
            <span data-local-time-of={step.at}></span>
            <Time iso={step.at} />: {step.percentage}%
          </li>
        ))}
      </ul>
    </div>
  );
}
