/**
 * The staged rollout card of a project page (docs/rollouts.md): the rollout
 * in force with halt, resume, widen, complete and end, or the form that
 * starts one for an active release that is not the latest.
 */
import type { Release, Rollout } from "../../src/store/mod.ts";
import type { FormError } from "../types.ts";
import { FormErrorSummary, InputField, PostButton } from "./components.tsx";
import { CsrfInput } from "./layout.tsx";

/** The rollout form as entered (start or change). */
export interface RolloutValues {
  release_id: string;
  percentage: string;
  schedule: string;
  tester_tag: string;
}

export const EMPTY_ROLLOUT_FORM: RolloutValues = {
  release_id: "",
  percentage: "",
  schedule: "",
  tester_tag: "",
};

export interface RolloutCardProps {
  csrfToken?: string;
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
}

/** A rollout's schedule as the form writes it: `TIME=PERCENT` steps, comma separated. */
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

export function RolloutCard(props: RolloutCardProps) {
  const { csrfToken, slug, rollout, live, percentageNow, versions, candidates, values, error } =
    props;
  const base = `/admin/projects/${slug}/rollout`;
  return (
    <section class="card" id="rollout" aria-labelledby="rollout-title">
      <h2 id="rollout-title">Staged rollout</h2>
      <FormErrorSummary error={error} />
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
            {rollout.schedule.length > 0 && <p class="hint">Schedule: {scheduleText(rollout)}</p>}
            {rollout.tester_tag !== null && (
              <p class="hint">
                Keys with the rollout tag <code>{rollout.tester_tag}</code> always get it.
              </p>
            )}
            <div class="row-actions">
              <PostButton
                action={`${base}/${rollout.halted ? "resume" : "halt"}`}
                csrfToken={csrfToken}
                label={rollout.halted ? "Resume" : "Halt"}
                buttonClass={rollout.halted ? "button" : "button button-danger"}
              />
              <PostButton action={`${base}/complete`} csrfToken={csrfToken} label="Complete" />
              <PostButton action={`${base}/end`} csrfToken={csrfToken} label="End" />
            </div>
            <form method="post" action={`${base}/change`} class="stack">
              <CsrfInput token={csrfToken} />
              <RolloutFields
                values={error ? values : currentValues(rollout)}
                error={error}
                prefix="rollout-change"
              />
              <button type="submit" class="button">Change rollout</button>
            </form>
          </div>
        )}
      {candidates.length > 0 && (
        <form method="post" action={base} class="stack" data-rollout-start>
          <h3>{rollout === null ? "Start a rollout" : "Replace with a new rollout"}</h3>
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
        inputmode="decimal"
        error={error}
      />
      <InputField
        id={`${prefix}-schedule`}
        name="schedule"
        label="Schedule"
        optional="optional"
        hint="Steps TIME=PERCENT, comma separated, e.g. 2026-12-01T09:00Z=10, 2026-12-02T09:00Z=50."
        value={values.schedule}
        error={error}
      />
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
